//! The authorization matrix, generated from the one route table
//! (`coresearch::routes::table::ROUTES`), so a new route cannot ship unprotected: for every
//! guarded route and every action, a key holding exactly that action must pass exactly
//! when the action grants every action the route requires (reference §4.1, modelled here
//! independently of the server's own expansion code; `POST /render-template` requires two),
//! and must get 403 `invalid_api_key` otherwise.
//! Also: public routes need no key, the master key passes everywhere, a missing header is
//! 401, and a tenant token is no API key outside search routes (reference §4.6).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{HttpResponse, MASTER_KEY, Options, Server, json_request, request};
use coresearch::auth::{Action, ActionSet};
use coresearch::routes::table::{ROUTES, Route};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// The actions `*.get` grants: the "read = yes" rows of reference §4.1.
const READ_ACTIONS: &[&str] = &[
    "search",
    "documents.get",
    "indexes.get",
    "tasks.get",
    "settings.get",
    "stats.get",
    "metrics.get",
    "version",
    "experimental.get",
    "export",
    "network.get",
    "chats.get",
    "chatsSettings.get",
    "webhooks.get",
    "fields.post",
    "dynamicSearchRules.get",
];

/// The `x.*` family actions and what each grants (reference §4.1); none grants itself.
const FAMILIES: &[(&str, &[&str])] = &[
    (
        "documents.*",
        &["documents.add", "documents.get", "documents.delete"],
    ),
    (
        "indexes.*",
        &[
            "indexes.create",
            "indexes.get",
            "indexes.update",
            "indexes.delete",
            "indexes.swap",
            "indexes.compact",
        ],
    ),
    ("settings.*", &["settings.get", "settings.update"]),
    (
        "tasks.*",
        &["tasks.get", "tasks.delete", "tasks.cancel", "tasks.compact"],
    ),
    ("stats.*", &["stats.get"]),
    ("metrics.*", &["metrics.get"]),
    ("dumps.*", &["dumps.create"]),
    ("snapshots.*", &["snapshots.create"]),
    ("chats.*", &["chats.get", "chats.delete"]),
    (
        "chatsSettings.*",
        &["chatsSettings.get", "chatsSettings.update"],
    ),
    (
        "webhooks.*",
        &[
            "webhooks.get",
            "webhooks.update",
            "webhooks.delete",
            "webhooks.create",
        ],
    ),
    (
        "dynamicSearchRules.*",
        &[
            "dynamicSearchRules.get",
            "dynamicSearchRules.create",
            "dynamicSearchRules.update",
            "dynamicSearchRules.delete",
        ],
    ),
];

/// A key uid no key has: `/keys/{key}` routes then answer 404 past authorization.
const ABSENT_KEY_UID: &str = "00000000-0000-4000-8000-000000000000";

/// Whether a key given the actions `key_actions` may call a route requiring every action of
/// `route_actions`.
fn grants_all(key_actions: &[&str], route_actions: &[Action]) -> bool {
    route_actions.iter().all(|route_action| {
        key_actions
            .iter()
            .any(|key_action| grants(key_action, route_action.wire_name()))
    })
}

/// The wire names of a route's actions, for messages.
fn names(route_actions: &[Action]) -> String {
    route_actions
        .iter()
        .map(|action| action.wire_name())
        .collect::<Vec<_>>()
        .join("` and `")
}

/// Whether a key given `key_action` may call a route requiring `route_action`.
fn grants(key_action: &str, route_action: &str) -> bool {
    match key_action {
        "*" => route_action != "*.get",
        "*.get" => READ_ACTIONS.contains(&route_action),
        family if family.ends_with(".*") => FAMILIES
            .iter()
            .find(|(name, _)| *name == family)
            .is_some_and(|(_, members)| members.contains(&route_action)),
        exact => exact == route_action,
    }
}

/// A concrete path for a route pattern: each `{parameter}` gets a value that passes
/// routing and authorization and changes nothing.
fn concrete_path(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| {
            match segment
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
            {
                Some("key") => ABSENT_KEY_UID.to_string(),
                Some("index_uid") => "matrix-index".to_string(),
                Some(_) => "0".to_string(),
                None => segment.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The request for `route` with `key`: JSON methods get an empty object, which is refused
/// or harmless past authorization (this test looks only at the authorization outcome).
fn route_request(route: &Route, key: Option<&str>) -> String {
    let method = route.method.as_str();
    let path = concrete_path(route.pattern);
    match method {
        "POST" | "PUT" | "PATCH" => json_request(method, &path, key, "{}"),
        _ => request(method, &path, key),
    }
}

fn is_auth_refusal(response: &HttpResponse) -> bool {
    response.status == 401 || response.status == 403
}

fn assert_invalid_api_key(response: &HttpResponse, context: &str) {
    assert_eq!(response.status, 403, "{context}: {}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": "The provided API key is invalid.",
            "code": "invalid_api_key",
            "type": "auth",
            "link": "https://docs.meilisearch.com/errors#invalid_api_key",
        }),
        "{context}"
    );
}

fn guarded_routes() -> impl Iterator<Item = (&'static Route, &'static [Action])> {
    ROUTES
        .iter()
        .filter(|route| !route.actions.is_empty())
        .map(|route| (route, route.actions))
}

fn describe(route: &Route) -> String {
    format!("{} {}", route.method.as_str(), route.pattern)
}

fn start() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    })
}

fn create_key(server: &Server, actions: &[&str]) -> Value {
    let body = json!({"actions": actions, "indexes": ["*"], "expiresAt": null}).to_string();
    let response = server.raw(&json_request("POST", "/keys", Some(MASTER_KEY), &body));
    assert_eq!(response.status, 201, "{actions:?}: {}", response.text());
    response.json()
}

#[test]
fn the_model_agrees_with_the_reference_read_flags_and_families() {
    // Guards the model itself: every action is known to it, read flags and family
    // expansions agree with the server's action table.
    for &action in Action::ALL {
        let name = action.wire_name();
        assert_eq!(
            READ_ACTIONS.contains(&name),
            action.is_read(),
            "read flag of {name}"
        );
        let expanded = ActionSet::expand(&[action]);
        for &other in Action::ALL {
            assert_eq!(
                expanded.contains(other),
                grants(name, other.wire_name()),
                "does `{name}` grant `{}`?",
                other.wire_name()
            );
        }
    }
}

#[test]
fn every_guarded_route_admits_exactly_the_keys_whose_actions_grant_it() {
    let server = start();
    let keys: Vec<(Action, String)> = Action::ALL
        .iter()
        .map(|&action| {
            let key = create_key(&server, &[action.wire_name()]);
            (
                action,
                key["key"]
                    .as_str()
                    .expect("as_str finds a value of that type")
                    .to_string(),
            )
        })
        .collect();
    let mut admitted = 0;
    let mut refused = 0;
    for (route, route_actions) in guarded_routes() {
        for (key_action, key) in &keys {
            let response = server.raw(&route_request(route, Some(key)));
            let context = format!(
                "{} (needs `{}`) with a `{}` key",
                describe(route),
                names(route_actions),
                key_action.wire_name()
            );
            if grants_all(&[key_action.wire_name()], route_actions) {
                assert!(
                    !is_auth_refusal(&response),
                    "{context} was refused: {} {}",
                    response.status,
                    response.text()
                );
                admitted += 1;
            } else {
                assert_invalid_api_key(&response, &context);
                refused += 1;
            }
        }
    }
    println!("matrix: {admitted} admitted, {refused} refused");
    // Every guarded route is admitted at least by `*` and by its own action.
    assert!(admitted >= 2 * guarded_routes().count());
    assert!(refused > 0);
}

#[test]
fn a_key_with_several_actions_holds_their_union_and_family_keys_their_members() {
    let server = start();
    let union = create_key(&server, &["version", "keys.get", "documents.*"]);
    let union = union["key"]
        .as_str()
        .expect("as_str finds a value of that type");
    let mut checked_family_member = false;
    for (route, route_actions) in guarded_routes() {
        let expected = grants_all(&["version", "keys.get", "documents.*"], route_actions);
        checked_family_member |= grants_all(&["documents.*"], route_actions);
        let response = server.raw(&route_request(route, Some(union)));
        if expected {
            assert!(!is_auth_refusal(&response), "{}", describe(route));
        } else {
            assert_invalid_api_key(&response, &describe(route));
        }
    }
    if !checked_family_member {
        println!(
            "no route needs a `documents.*` member yet: family keys are covered by the matrix"
        );
    }
}

#[test]
fn public_routes_need_no_key_and_the_master_key_passes_everywhere() {
    let server = start();
    for route in ROUTES.iter().filter(|route| route.actions.is_empty()) {
        for key in [None, Some("not-a-key"), Some(MASTER_KEY)] {
            let response = server.raw(&route_request(route, key));
            assert_eq!(response.status, 200, "{} with {key:?}", describe(route));
        }
    }
    for (route, _) in guarded_routes() {
        let response = server.raw(&route_request(route, Some(MASTER_KEY)));
        assert!(
            !is_auth_refusal(&response),
            "{} refused the master key: {} {}",
            describe(route),
            response.status,
            response.text()
        );
        let response = server.raw(&route_request(route, None));
        assert_eq!(response.status, 401, "{} without a key", describe(route));
        assert_eq!(
            response.json(),
            json!({
                "message": "The Authorization header is missing. It must use the bearer authorization method.",
                "code": "missing_authorization_header",
                "type": "auth",
                "link": "https://docs.meilisearch.com/errors#missing_authorization_header",
            })
        );
        let response = server.raw(&route_request(route, Some("not-a-key")));
        assert_invalid_api_key(&response, &describe(route));
        // A truncated master key is no master key.
        let master_prefix = &MASTER_KEY[..MASTER_KEY.len() - 1];
        let response = server.raw(&route_request(route, Some(master_prefix)));
        assert_invalid_api_key(&response, &describe(route));
    }
}

/// An HS256 JWT signed with `secret`, as any JWT library produces it.
fn sign_hs256(claims: &Value, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"HS256"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("new_from_slice succeeds");
    mac.update(signing_input.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{signature}")
}

#[test]
fn a_valid_tenant_token_is_no_api_key_outside_search_routes() {
    let server = start();
    // Parent keys: a search key, and an all-powerful one whose key string would pass
    // every route if the token were taken for it.
    let search = create_key(&server, &["search"]);
    let admin = create_key(&server, &["*"]);
    let expires = time::OffsetDateTime::now_utc().unix_timestamp() + 3600;
    for parent in [&search, &admin] {
        let uid = parent["uid"]
            .as_str()
            .expect("as_str finds a value of that type");
        let secret = parent["key"]
            .as_str()
            .expect("as_str finds a value of that type");
        for search_rules in [
            json!(["*"]),
            json!({"*": null}),
            json!({"*": {"filter": "a = 1"}}),
        ] {
            let token = sign_hs256(
                &json!({"apiKeyUid": uid, "searchRules": search_rules, "exp": expires}),
                secret,
            );
            for (route, actions) in guarded_routes() {
                if matches!(actions, [Action::Search] | [Action::ChatCompletions]) {
                    continue;
                }
                let response = server.raw(&route_request(route, Some(&token)));
                assert_invalid_api_key(
                    &response,
                    &format!(
                        "tenant token of {} on {}",
                        parent["actions"],
                        describe(route)
                    ),
                );
            }
        }
        // The parent key string itself is accepted where its actions allow.
        let response = server.raw(&request("GET", "/version", Some(secret)));
        let expected = if parent["actions"] == json!(["*"]) {
            200
        } else {
            403
        };
        assert_eq!(response.status, expected);
    }
}

/// The routes naming no index that a key restricted to some indexes may call: each narrows
/// its work to the key's indexes itself (reference §4: `indexes.get`, `indexes.create`,
/// `indexes.swap`, `stats.get`, `search`, `tasks.*` are checked by their handlers). Kept
/// here by method and path, independently of the server's own scope table.
const ROUTES_FILTERING_BY_INDEX: &[(&str, &str)] = &[
    ("GET", "/indexes"),
    ("POST", "/indexes"),
    ("POST", "/swap-indexes"),
    ("GET", "/stats"),
    ("POST", "/multi-search"),
    ("GET", "/tasks"),
    ("POST", "/tasks/cancel"),
    ("DELETE", "/tasks"),
    ("GET", "/tasks/{task_id}"),
    ("GET", "/tasks/{task_id}/documents"),
    ("GET", "/batches"),
    ("GET", "/batches/{batch_id}"),
    ("POST", "/chats/{workspace_uid}/chat/completions"),
    ("POST", "/render-template"),
];

fn names_an_index(route: &Route) -> bool {
    route.pattern.contains("{index_uid}")
}

fn filters_by_index(route: &Route) -> bool {
    ROUTES_FILTERING_BY_INDEX
        .iter()
        .any(|&(method, pattern)| route.method.as_str() == method && route.pattern == pattern)
}

fn create_scoped_key(server: &Server, actions: &[&str], indexes: &[&str]) -> String {
    let body = json!({"actions": actions, "indexes": indexes, "expiresAt": null}).to_string();
    let response = server.raw(&json_request("POST", "/keys", Some(MASTER_KEY), &body));
    assert_eq!(response.status, 201, "{indexes:?}: {}", response.text());
    response.json()["key"]
        .as_str()
        .expect("a created key has its key string")
        .to_string()
}

/// Every guarded route × a `*` key scoped to the route's index (exactly, and by a prefix
/// pattern), to another index, and to every index. A restricted key passes a route naming
/// no index only when that route filters by index, and a route naming an index only when
/// the key covers it; a key over `*` passes everywhere.
#[test]
fn a_key_restricted_to_some_indexes_reaches_nothing_beyond_them() {
    let server = start();
    let own_exact = create_scoped_key(&server, &["*"], &["matrix-index"]);
    let own_prefix = create_scoped_key(&server, &["*"], &["matrix-*"]);
    let other = create_scoped_key(&server, &["*"], &["other-index"]);
    let every = create_scoped_key(&server, &["*"], &["*"]);
    let mut refused_global = 0;
    for (route, _) in guarded_routes() {
        let expect_admitted = |key_covers_route_index: bool| {
            if names_an_index(route) {
                key_covers_route_index
            } else {
                filters_by_index(route)
            }
        };
        for (key, name, covers) in [
            (&own_exact, "scoped to the index", true),
            (&own_prefix, "scoped to `matrix-*`", true),
            (&other, "scoped to another index", false),
            (&every, "scoped to `*`", true),
        ] {
            let response = server.raw(&route_request(route, Some(key)));
            let context = format!("{} with a `*` key {name}", describe(route));
            let admitted = if key == &every {
                true
            } else {
                expect_admitted(covers)
            };
            if admitted {
                assert!(
                    !is_auth_refusal(&response),
                    "{context} was refused: {} {}",
                    response.status,
                    response.text()
                );
            } else if names_an_index(route) {
                assert_eq!(response.status, 403, "{context}: {}", response.text());
                assert_eq!(response.json()["code"], "invalid_api_key", "{context}");
                assert_eq!(
                    response.json()["message"],
                    "The API key cannot acces the index `matrix-index`, authorized indexes are \
                     [\"other-index\"].",
                    "{context}"
                );
            } else if route.pattern == "/metrics" {
                // Meilisearch 1.41 words this refusal on `/metrics`.
                assert_eq!(response.status, 403, "{context}: {}", response.text());
                assert_eq!(
                    response.json(),
                    json!({
                        "message": "The provided API key is invalid. The API key for the \
                                    `/metrics` route must allow access to all indexes.",
                        "code": "invalid_api_key",
                        "type": "auth",
                        "link": "https://docs.meilisearch.com/errors#invalid_api_key",
                    }),
                    "{context}"
                );
                refused_global += 1;
            } else {
                assert_invalid_api_key(&response, &context);
                refused_global += 1;
            }
        }
    }
    // Keys, experimental features and version at least are instance-wide.
    assert!(refused_global >= 3 * 8, "{refused_global}");
}

/// The hole this closes, step by step: a restricted `*` key can neither read the keys (and
/// with them the admin key's secret), nor mint an unrestricted key, nor change the
/// experimental features; and no restricted key can be created with such an action.
#[test]
fn a_restricted_admin_key_cannot_read_keys_mint_keys_or_toggle_features() {
    let server = start();
    let restricted = create_scoped_key(&server, &["*"], &["base"]);
    for (method, path, body) in [
        ("GET", "/keys", None),
        (
            "POST",
            "/keys",
            Some(json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null})),
        ),
        (
            "PATCH",
            "/experimental-features",
            Some(json!({"metrics": true})),
        ),
        ("GET", "/experimental-features", None),
        ("GET", "/version", None),
    ] {
        let raw = match &body {
            Some(body) => json_request(method, path, Some(&restricted), &body.to_string()),
            None => request(method, path, Some(&restricted)),
        };
        assert_invalid_api_key(&server.raw(&raw), &format!("{method} {path}"));
    }
    let keys = server.send("GET", "/keys?limit=100", None).json();
    assert_eq!(keys["total"], 5, "no key was minted: {keys}");
    let features = server.send("GET", "/experimental-features", None).json();
    assert_eq!(features["metrics"], false, "{features}");

    for action in [
        "keys.get",
        "keys.create",
        "experimental.update",
        "dumps.create",
        "version",
    ] {
        let body =
            json!({"actions": ["search", action], "indexes": ["base", "other"], "expiresAt": null});
        let response = server.send("POST", "/keys", Some(&body));
        assert_eq!(response.status, 400, "{action}: {}", response.text());
        assert_eq!(
            response.json(),
            json!({
                "message": format!(
                    "cannot create index-scoped API key with global action `\"{action}\"`\n  - Hint: remove action `\"{action}\"` from the action list, or remove `indexes` to make the key global"
                ),
                "code": "index_scoped_api_key_with_global_action",
                "type": "invalid_request",
                "link": "https://docs.meilisearch.com/errors#index_scoped_api_key_with_global_action",
            })
        );
    }
    // The same actions over every index, or a restricted key of index actions, are created.
    for (actions, indexes) in [
        (json!(["keys.get"]), json!(["*"])),
        (json!(["keys.get"]), json!(["base", "*"])),
        (
            json!(["search", "documents.*", "tasks.get"]),
            json!(["base"]),
        ),
    ] {
        let body = json!({"actions": actions, "indexes": indexes, "expiresAt": null});
        let response = server.send("POST", "/keys", Some(&body));
        assert_eq!(response.status, 201, "{body}: {}", response.text());
    }
    let keys = server.send("GET", "/keys?limit=100", None).json();
    assert_eq!(keys["total"], 8, "{keys}");
}

/// An instance-wide route seen by keys: what a key restricted to some indexes meets, and what
/// a key granting the route's action over every index registers.
struct InstanceWideRoute<'a> {
    path: &'a str,
    body: &'a str,
    /// The route's own action, which a restricted key may not be given.
    action: &'a str,
    /// An action granting the route over every index.
    granting: &'a str,
    status: u16,
    task_type: &'a str,
}

/// A key restricted to some indexes is refused on `route` (even one holding `*`) and cannot
/// be given its action, and nothing is registered; a key granting it over every index
/// registers the task.
fn assert_only_unrestricted_keys_reach(server: &Server, route: &InstanceWideRoute<'_>) {
    let restricted = create_scoped_key(server, &["*"], &["base"]);
    let response = server.raw(&json_request(
        "POST",
        route.path,
        Some(&restricted),
        route.body,
    ));
    assert_invalid_api_key(
        &response,
        &format!("POST {} with a `*` key scoped to `base`", route.path),
    );
    let scoped = json!({"actions": [route.action], "indexes": ["base"], "expiresAt": null});
    let response = server.send("POST", "/keys", Some(&scoped));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["code"],
        "index_scoped_api_key_with_global_action"
    );
    let tasks = server.send("GET", "/tasks", None).json();
    assert_eq!(tasks["total"], 0, "nothing was registered: {tasks}");

    let granted = create_scoped_key(server, &[route.granting], &["*"]);
    let response = server.raw(&json_request(
        "POST",
        route.path,
        Some(&granted),
        route.body,
    ));
    assert_eq!(response.status, route.status, "{}", response.text());
    assert_eq!(response.json()["type"], route.task_type);
}

/// `POST /export` sends every index it selects to another server: an instance-wide action.
#[test]
fn a_key_restricted_to_some_indexes_never_exports() {
    let server = start();
    let body = json!({"url": "http://127.0.0.1:1", "indexes": {"base": {}}}).to_string();
    let route = InstanceWideRoute {
        path: "/export",
        body: &body,
        action: "export",
        granting: "export",
        status: 200,
        task_type: "export",
    };
    assert_only_unrestricted_keys_reach(&server, &route);
}

/// `POST /dumps` writes every index, key and task of the instance: an instance-wide action.
#[test]
fn a_key_restricted_to_some_indexes_never_creates_a_dump() {
    let server = start();
    let route = InstanceWideRoute {
        path: "/dumps",
        body: "",
        action: "dumps.create",
        granting: "dumps.*",
        status: 202,
        task_type: "dumpCreation",
    };
    assert_only_unrestricted_keys_reach(&server, &route);
}

/// `POST /snapshots` copies every index, key and task of the instance: an instance-wide
/// action.
#[test]
fn a_key_restricted_to_some_indexes_never_creates_a_snapshot() {
    let server = start();
    let route = InstanceWideRoute {
        path: "/snapshots",
        body: "",
        action: "snapshots.create",
        granting: "snapshots.*",
        status: 202,
        task_type: "snapshotCreation",
    };
    assert_only_unrestricted_keys_reach(&server, &route);
}

/// The `/dynamic-search-rules` routes are in the table, each guarded by its action, and are
/// instance-wide: a key restricted to some indexes (even one holding `*`) is refused on every
/// one of them, a `dynamicSearchRules.*` key over every index reaches them all, and a
/// restricted key cannot be given their actions.
#[test]
fn the_dynamic_search_rules_routes_are_instance_wide_and_guarded_by_their_actions() {
    let expected = [
        ("POST", "/dynamic-search-rules", "dynamicSearchRules.get"),
        (
            "GET",
            "/dynamic-search-rules/{uid}",
            "dynamicSearchRules.get",
        ),
        (
            "PATCH",
            "/dynamic-search-rules/{uid}",
            "dynamicSearchRules.update",
        ),
        (
            "DELETE",
            "/dynamic-search-rules/{uid}",
            "dynamicSearchRules.delete",
        ),
        (
            "DELETE",
            "/dynamic-search-rules",
            "dynamicSearchRules.delete",
        ),
    ];
    for (method, pattern, action) in expected {
        let route = ROUTES
            .iter()
            .find(|route| route.method.as_str() == method && route.pattern == pattern)
            .unwrap_or_else(|| panic!("{method} {pattern} is in the route table"));
        assert_eq!(
            route
                .actions
                .iter()
                .map(|action| action.wire_name())
                .collect::<Vec<_>>(),
            [action],
            "{method} {pattern}"
        );
    }
    let server = start();
    let enabled = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        Some(MASTER_KEY),
        r#"{"dynamicSearchRules": true}"#,
    ));
    assert_eq!(enabled.status, 200, "{}", enabled.text());
    let restricted = create_scoped_key(&server, &["*"], &["matrix-index"]);
    let family = create_scoped_key(&server, &["dynamicSearchRules.*"], &["*"]);
    let requests = [
        (
            "PATCH",
            "/dynamic-search-rules/promo",
            Some(
                r#"{"actions": [{"selector": {"id": "1"}, "action": {"type": "pin", "position": 0}}]}"#,
            ),
            202,
        ),
        ("POST", "/dynamic-search-rules", Some("{}"), 200),
        ("GET", "/dynamic-search-rules/promo", None, 200),
        ("DELETE", "/dynamic-search-rules/promo", None, 202),
        ("DELETE", "/dynamic-search-rules", None, 202),
    ];
    for (method, path, body, status) in requests {
        let send = |key: &str| match body {
            Some(body) => server.raw(&json_request(method, path, Some(key), body)),
            None => server.raw(&request(method, path, Some(key))),
        };
        assert_invalid_api_key(&send(&restricted), &format!("{method} {path} scoped"));
        let response = send(&family);
        assert_eq!(
            response.status,
            status,
            "{method} {path}: {}",
            response.text()
        );
        if status == 202 {
            // A change is a task: the next request reads what it did.
            let task = server.wait_task(&response.json()["taskUid"]);
            assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
        }
    }
    for action in ["dynamicSearchRules.get", "dynamicSearchRules.update"] {
        let body = json!({"actions": [action], "indexes": ["matrix-index"], "expiresAt": null});
        let response = server.send("POST", "/keys", Some(&body));
        assert_eq!(response.status, 400, "{action}: {}", response.text());
        assert_eq!(
            response.json()["code"],
            "index_scoped_api_key_with_global_action"
        );
    }
}

/// The `/chats` routes are in the table, each guarded by its action: the workspace and
/// settings routes are instance-wide (a key restricted to some indexes, even holding `*`, is
/// refused on every one, and cannot be given their actions), a `chats.*` or
/// `chatsSettings.*` key over every index reaches its own routes only, and the completion
/// route admits restricted keys (its searches are narrowed to their indexes).
#[test]
fn the_chat_routes_are_guarded_by_their_actions() {
    let expected = [
        ("GET", "/chats", "chats.get"),
        ("GET", "/chats/{workspace_uid}", "chats.get"),
        ("DELETE", "/chats/{workspace_uid}", "chats.delete"),
        (
            "GET",
            "/chats/{workspace_uid}/settings",
            "chatsSettings.get",
        ),
        (
            "PATCH",
            "/chats/{workspace_uid}/settings",
            "chatsSettings.update",
        ),
        (
            "DELETE",
            "/chats/{workspace_uid}/settings",
            "chatsSettings.update",
        ),
        (
            "POST",
            "/chats/{workspace_uid}/chat/completions",
            "chatCompletions",
        ),
    ];
    for (method, pattern, action) in expected {
        let route = ROUTES
            .iter()
            .find(|route| route.method.as_str() == method && route.pattern == pattern)
            .unwrap_or_else(|| panic!("{method} {pattern} is in the route table"));
        assert_eq!(
            route
                .actions
                .iter()
                .map(|action| action.wire_name())
                .collect::<Vec<_>>(),
            [action],
            "{method} {pattern}"
        );
    }
    let server = start();
    let enabled = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        Some(MASTER_KEY),
        r#"{"chatCompletions": true}"#,
    ));
    assert_eq!(enabled.status, 200, "{}", enabled.text());
    let restricted = create_scoped_key(&server, &["*"], &["matrix-index"]);
    let settings = create_scoped_key(&server, &["chatsSettings.*"], &["*"]);
    let chats = create_scoped_key(&server, &["chats.*"], &["*"]);
    let requests = [
        (
            &settings,
            "PATCH",
            "/chats/support/settings",
            Some("{}"),
            200,
        ),
        (&settings, "GET", "/chats/support/settings", None, 200),
        (&settings, "DELETE", "/chats/support/settings", None, 200),
        (&chats, "GET", "/chats", None, 200),
        (&chats, "GET", "/chats/support", None, 200),
        (&chats, "DELETE", "/chats/support", None, 204),
    ];
    for (granted, method, path, body, status) in requests {
        let send = |key: &str| match body {
            Some(body) => server.raw(&json_request(method, path, Some(key), body)),
            None => server.raw(&request(method, path, Some(key))),
        };
        assert_invalid_api_key(&send(&restricted), &format!("{method} {path} scoped"));
        let other = if granted == &settings {
            &chats
        } else {
            &settings
        };
        assert_invalid_api_key(
            &send(other),
            &format!("{method} {path} by the other family"),
        );
        let response = send(granted);
        assert_eq!(
            response.status,
            status,
            "{method} {path}: {}",
            response.text()
        );
    }
    // The completion route passes authentication with a restricted key: the workspace is
    // gone, so it answers 404 past it.
    let completion = r#"{"model": "m", "messages": [], "stream": true}"#;
    let response = server.raw(&json_request(
        "POST",
        "/chats/support/chat/completions",
        Some(&restricted),
        completion,
    ));
    assert_eq!(response.status, 404, "{}", response.text());
    assert_eq!(response.json()["code"], "chat_not_found");
    for action in [
        "chats.get",
        "chats.delete",
        "chatsSettings.get",
        "chatsSettings.update",
    ] {
        let body = json!({"actions": [action], "indexes": ["matrix-index"], "expiresAt": null});
        let response = server.send("POST", "/keys", Some(&body));
        assert_eq!(response.status, 400, "{action}: {}", response.text());
        assert_eq!(
            response.json()["code"],
            "index_scoped_api_key_with_global_action"
        );
    }
}
