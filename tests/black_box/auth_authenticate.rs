//! The per-request authentication decision, against Meilisearch 1.41's answers: header
//! parsing, open access without a master key, the master key, API keys with their actions,
//! index patterns and expiry, and the context handed to routes.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use coresearch::auth::key::derive_key_string;
use coresearch::auth::{
    Action, AuthContext, AuthRequest, AuthenticationError, KeySet, KeyStore, MemoryKeyPersistence,
    authenticate, parse_create_api_key,
};
use coresearch::errors::{Code, ResponseError};
use serde_json::json;
use time::OffsetDateTime;
use time::macros::datetime;
use uuid::Uuid;

const NOW: OffsetDateTime = datetime!(2026-11-21 15:00:00 UTC);
const MASTER_KEY: &str = "MASTER_KEY";

/// A store with the default keys plus the keys described by `bodies` (uids 1, 2, ...).
fn store_with(master_key: Option<&str>, bodies: &[serde_json::Value]) -> Arc<KeySet> {
    let mut store = KeyStore::open(
        Box::new(MemoryKeyPersistence::default()),
        master_key.map(str::to_string),
        NOW,
    )
    .expect("open succeeds");
    for (position, body) in bodies.iter().enumerate() {
        let mut body = body.clone();
        body["uid"] = json!(uid(position as u128 + 1));
        store
            .create(
                parse_create_api_key(&body, NOW).expect("parse_create_api_key succeeds"),
                NOW,
            )
            .expect("create succeeds");
    }
    store.snapshot()
}

fn uid(number: u128) -> Uuid {
    Uuid::from_u128(number)
}

fn bearer(token: &str) -> Vec<u8> {
    format!("Bearer {token}").into_bytes()
}

fn key_of(number: u128) -> String {
    derive_key_string(MASTER_KEY, uid(number))
}

fn run(
    keys: &KeySet,
    header: Option<&[u8]>,
    action: Action,
    index: Option<&str>,
) -> Result<AuthContext, AuthenticationError> {
    let request = AuthRequest {
        authorization: header,
        action,
        index_uid: index,
    };
    authenticate(keys, &request, NOW)
}

fn assert_refused(result: Result<AuthContext, AuthenticationError>, code: Code, message: &str) {
    let error = ResponseError::from(result.unwrap_err());
    assert_eq!(error.message, message);
    assert_eq!(error.code, code);
}

const INVALID: &str = "The provided API key is invalid.";
const MISSING_HEADER: &str =
    "The Authorization header is missing. It must use the bearer authorization method.";
const MISSING_MASTER_KEY: &str = "Meilisearch is running without a master key. To access this API endpoint, you must have set a master key at launch.";

fn default_key(keys: &KeySet, name: &str) -> String {
    let key = keys
        .keys()
        .find(|key| key.name.as_deref() == Some(name))
        .expect("find finds a value");
    derive_key_string(MASTER_KEY, key.uid)
}

#[test]
fn without_master_key_everything_but_keys_routes_is_open() {
    let keys = store_with(None, &[]);
    let context = run(&keys, None, Action::DocumentsAdd, Some("dog")).expect("run succeeds");
    assert_eq!(context, AuthContext::full_access());
    assert!(
        run(
            &keys,
            Some(&bearer("anything")),
            Action::Search,
            Some("dog")
        )
        .is_ok()
    );
    for action in [
        Action::KeysGet,
        Action::KeysCreate,
        Action::KeysUpdate,
        Action::KeysDelete,
    ] {
        assert_refused(
            run(&keys, None, action, None),
            Code::MissingMasterKey,
            MISSING_MASTER_KEY,
        );
        assert_refused(
            run(&keys, Some(&bearer("anything")), action, None),
            Code::MissingMasterKey,
            MISSING_MASTER_KEY,
        );
    }
}

#[test]
fn a_malformed_header_is_refused_even_without_master_key() {
    for master_key in [None, Some(MASTER_KEY)] {
        let keys = store_with(master_key, &[]);
        for header in [
            &b"Basic abc"[..],
            b"bearer abc",
            b"",
            b"Bearer\xffabc",
            b"Token",
        ] {
            assert_refused(
                run(&keys, Some(header), Action::Search, None),
                Code::MissingAuthorizationHeader,
                MISSING_HEADER,
            );
        }
        assert_refused(
            run(&keys, Some(b"Bearer"), Action::Search, None),
            Code::InvalidApiKey,
            INVALID,
        );
    }
}

#[test]
fn with_master_key_a_missing_header_is_401() {
    let keys = store_with(Some(MASTER_KEY), &[]);
    for action in [Action::Search, Action::DocumentsGet, Action::KeysGet] {
        assert_refused(
            run(&keys, None, action, Some("dog")),
            Code::MissingAuthorizationHeader,
            MISSING_HEADER,
        );
    }
}

#[test]
fn the_master_key_has_full_access_and_near_misses_do_not() {
    let keys = store_with(Some(MASTER_KEY), &[]);
    for &action in Action::ALL {
        let context =
            run(&keys, Some(&bearer(MASTER_KEY)), action, Some("any")).expect("run succeeds");
        assert_eq!(context, AuthContext::full_access());
    }
    for wrong in ["MASTER_KE", "MASTER_KEY ", "master_key", "", "kefir"] {
        assert_refused(
            run(
                &keys,
                Some(&bearer(wrong)),
                Action::DocumentsGet,
                Some("dog"),
            ),
            Code::InvalidApiKey,
            INVALID,
        );
    }
    // The token is everything after the first space.
    assert!(run(&keys, Some(b"Bearer  MASTER_KEY"), Action::Search, None).is_err());
}

#[test]
fn a_key_outside_its_indexes_gets_the_list_of_its_patterns() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[json!({"actions": ["search"], "indexes": ["dog"], "expiresAt": null})],
    );
    assert_refused(
        run(
            &keys,
            Some(&bearer(&key_of(1))),
            Action::Search,
            Some("doggo"),
        ),
        Code::InvalidApiKey,
        "The API key cannot acces the index `doggo`, authorized indexes are [\"dog\"].",
    );
    let context = run(
        &keys,
        Some(&bearer(&key_of(1))),
        Action::Search,
        Some("dog"),
    )
    .expect("run succeeds");
    assert_eq!(context.key_uid(), Some(uid(1)));
    assert!(!context.is_tenant_token());
}

#[test]
fn the_pattern_list_is_sorted_and_deduplicated() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[json!({"actions": ["*"], "indexes": ["zoo", "ab*", "zoo"], "expiresAt": null})],
    );
    assert_refused(
        run(
            &keys,
            Some(&bearer(&key_of(1))),
            Action::DocumentsGet,
            Some("a"),
        ),
        Code::InvalidApiKey,
        "The API key cannot acces the index `a`, authorized indexes are [\"ab*\", \"zoo\"].",
    );
}

#[test]
fn actions_are_checked_after_indexes() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[json!({"actions": ["documents.*"], "indexes": ["sales"], "expiresAt": null})],
    );
    let token = bearer(&key_of(1));
    assert!(run(&keys, Some(&token), Action::DocumentsAdd, Some("sales")).is_ok());
    assert_refused(
        run(&keys, Some(&token), Action::SettingsGet, Some("sales")),
        Code::InvalidApiKey,
        INVALID,
    );
    // `documents.*` is not granted by `documents.*` (only by `*`): POST /documents/edit.
    assert_refused(
        run(&keys, Some(&token), Action::DocumentsAll, Some("sales")),
        Code::InvalidApiKey,
        INVALID,
    );
    // Routes without an index pass when the key holds the action on some index.
    assert!(run(&keys, Some(&token), Action::DocumentsGet, None).is_ok());
    assert_refused(
        run(&keys, Some(&token), Action::TasksGet, None),
        Code::InvalidApiKey,
        INVALID,
    );
}

#[test]
fn star_keys_pass_family_wildcard_routes() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null})],
    );
    assert!(
        run(
            &keys,
            Some(&bearer(&key_of(1))),
            Action::DocumentsAll,
            Some("sales")
        )
        .is_ok()
    );
}

#[test]
fn expired_keys_are_invalid() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[json!({"actions": ["*"], "indexes": ["*"], "expiresAt": "2026-11-21T15:00:01Z"})],
    );
    let token = bearer(&key_of(1));
    assert!(run(&keys, Some(&token), Action::Search, Some("a")).is_ok());
    let request = AuthRequest {
        authorization: Some(&token),
        action: Action::Search,
        index_uid: Some("a"),
    };
    let later = datetime!(2026-11-21 15:00:01 UTC);
    assert_eq!(
        authenticate(&keys, &request, later),
        Err(AuthenticationError::InvalidApiKey)
    );
}

#[test]
fn key_strings_match_in_either_case_and_nothing_else() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[json!({"actions": ["search"], "indexes": ["*"], "expiresAt": null})],
    );
    assert!(
        run(
            &keys,
            Some(&bearer(&key_of(1).to_uppercase())),
            Action::Search,
            None
        )
        .is_ok()
    );
    let mut truncated = key_of(1);
    truncated.pop();
    for wrong in [truncated, uid(1).to_string(), format!("{}00", key_of(1))] {
        assert_refused(
            run(&keys, Some(&bearer(&wrong)), Action::Search, None),
            Code::InvalidApiKey,
            INVALID,
        );
    }
}

#[test]
fn default_keys_have_meilisearch_powers() {
    let keys = store_with(Some(MASTER_KEY), &[]);
    let admin = bearer(&default_key(&keys, "Default Admin API Key"));
    let search = bearer(&default_key(&keys, "Default Search API Key"));
    let read_only = bearer(&default_key(&keys, "Default Read-Only Admin API Key"));
    let chat = bearer(&default_key(&keys, "Default Chat API Key"));
    for action in [
        Action::KeysCreate,
        Action::KeysGet,
        Action::KeysDelete,
        Action::DocumentsAdd,
    ] {
        assert!(run(&keys, Some(&admin), action, None).is_ok(), "{action}");
    }
    assert!(run(&keys, Some(&admin), Action::AllGet, None).is_err());
    assert!(run(&keys, Some(&search), Action::Search, Some("x")).is_ok());
    assert!(run(&keys, Some(&search), Action::DocumentsGet, Some("x")).is_err());
    assert!(run(&keys, Some(&read_only), Action::KeysGet, None).is_ok());
    assert!(run(&keys, Some(&read_only), Action::SettingsGet, Some("x")).is_ok());
    assert!(run(&keys, Some(&read_only), Action::KeysCreate, None).is_err());
    assert!(run(&keys, Some(&read_only), Action::ChatCompletions, None).is_err());
    assert!(run(&keys, Some(&chat), Action::ChatCompletions, None).is_ok());
    assert!(run(&keys, Some(&chat), Action::ChatsGet, None).is_err());
}

#[test]
fn a_jwt_outside_search_routes_is_just_an_invalid_key() {
    let keys = store_with(Some(MASTER_KEY), &[]);
    let jwt = coresearch::auth::tenant_token::sign_tenant_token(
        &json!({"tamo": "kefir"}),
        "tamo",
        jsonwebtoken::Algorithm::HS256,
    )
    .expect("sign_tenant_token succeeds");
    assert_refused(
        run(
            &keys,
            Some(&bearer(&jwt)),
            Action::DocumentsGet,
            Some("dog"),
        ),
        Code::InvalidApiKey,
        INVALID,
    );
}

#[test]
fn the_context_filters_listings_and_index_creation() {
    let keys = store_with(
        Some(MASTER_KEY),
        &[
            json!({"actions": ["indexes.*"], "indexes": ["sal*"], "expiresAt": null}),
            json!({"actions": ["indexes.get"], "indexes": ["*"], "expiresAt": null}),
        ],
    );
    let scoped =
        run(&keys, Some(&bearer(&key_of(1))), Action::IndexesGet, None).expect("run succeeds");
    let names = ["products", "sales", "salt", "movies"];
    let visible: Vec<_> = scoped.filter_authorized(names, |name| name).collect();
    assert_eq!(visible, ["sales", "salt"]);
    assert!(!scoped.all_indexes_authorized());
    assert!(scoped.allow_index_creation("sales-2"));
    assert!(!scoped.allow_index_creation("products"));
    let reader =
        run(&keys, Some(&bearer(&key_of(2))), Action::IndexesGet, None).expect("run succeeds");
    assert!(reader.all_indexes_authorized());
    assert!(!reader.allow_index_creation("sales"));
    assert_eq!(
        reader
            .index_search_rules("x")
            .expect("index_search_rules succeeds")
            .filter,
        None
    );
    let master = run(
        &keys,
        Some(&bearer(MASTER_KEY)),
        Action::IndexesCreate,
        Some("new"),
    )
    .expect("run succeeds");
    assert!(master.allow_index_creation("new") && master.all_indexes_authorized());
}
