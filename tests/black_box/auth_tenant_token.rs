//! Tenant tokens through `authenticate`: every claim, every rejection with Meilisearch
//! 1.41's message, the search rules handed to routes, and filter merging.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use coresearch::auth::key::derive_key_string;
use coresearch::auth::tenant_token::sign_tenant_token;
use coresearch::auth::{
    Action, AuthContext, AuthRequest, AuthenticationError, KeySet, KeyStore, MemoryKeyPersistence,
    authenticate, merge_filters, parse_create_api_key,
};
use coresearch::errors::{Code, ResponseError};
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;
use uuid::Uuid;

const NOW: OffsetDateTime = datetime!(2026-11-21 15:00:00 UTC);
const MASTER_KEY: &str = "MASTER_KEY";

fn uid(number: u128) -> Uuid {
    Uuid::from_u128(number)
}

fn parent_key(number: u128) -> String {
    derive_key_string(MASTER_KEY, uid(number))
}

/// Parent keys: 1 = search on `dog` (Meilisearch's own test key), 2 = `*` on every index,
/// 3 = every action but search (and the wildcards granting it), 4 = search, expired at NOW + 10 s, 5 = chatCompletions.
fn keys() -> Arc<KeySet> {
    let mut store = KeyStore::open(
        Box::new(MemoryKeyPersistence::default()),
        Some(MASTER_KEY.into()),
        NOW,
    )
    .expect("open succeeds");
    let every_action_but_search: Vec<&str> = Action::ALL
        .iter()
        .filter(|action| !matches!(action, Action::Search | Action::All | Action::AllGet))
        .map(|action| action.wire_name())
        .collect();
    let bodies = [
        json!({"actions": ["search"], "indexes": ["dog"], "expiresAt": null}),
        json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null}),
        json!({"actions": every_action_but_search, "indexes": ["*"], "expiresAt": null}),
        json!({"actions": ["search"], "indexes": ["*"], "expiresAt": "2026-11-21T15:00:10Z"}),
        json!({"actions": ["chatCompletions"], "indexes": ["*"], "expiresAt": null}),
    ];
    for (position, mut body) in bodies.into_iter().enumerate() {
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

fn token(claims: Value, secret: &str) -> String {
    sign_tenant_token(&claims, secret, Algorithm::HS256).expect("sign_tenant_token succeeds")
}

fn search_at(
    keys: &KeySet,
    token: &str,
    index: Option<&str>,
    now: OffsetDateTime,
) -> Result<AuthContext, AuthenticationError> {
    let header = format!("Bearer {token}").into_bytes();
    let request = AuthRequest {
        authorization: Some(&header),
        action: Action::Search,
        index_uid: index,
    };
    authenticate(keys, &request, now)
}

fn search(
    keys: &KeySet,
    token: &str,
    index: Option<&str>,
) -> Result<AuthContext, AuthenticationError> {
    search_at(keys, token, index, NOW)
}

fn refused(result: Result<AuthContext, AuthenticationError>) -> String {
    let error = ResponseError::from(result.unwrap_err());
    assert_eq!(error.code, Code::InvalidApiKey);
    assert_eq!(error.status(), 403);
    error.message
}

#[test]
fn meilisearch_decode_failures_are_worded_identically() {
    let keys = keys();
    let missing_rules = token(json!({"tamo": "kefir"}), "tamo");
    assert_eq!(
        refused(search(&keys, &missing_rules, Some("dog"))),
        "Could not decode tenant token, JSON error: missing field `searchRules` at line 1 column 16."
    );
    let bad_rules = token(json!({"searchRules": "kefir"}), "tamo");
    assert_eq!(
        refused(search(&keys, &bad_rules, Some("dog"))),
        "Could not decode tenant token, JSON error: data did not match any variant of untagged enum SearchRules at line 1 column 23."
    );
    let wrong_secret = token(
        json!({"searchRules": ["kefir"], "apiKeyUid": Uuid::nil()}),
        "tamo",
    );
    assert_eq!(
        refused(search(&keys, &wrong_secret, Some("dog"))),
        "Could not decode tenant token, InvalidSignature."
    );
}

#[test]
fn a_bad_api_key_uid_carries_the_uuid_message() {
    let keys = keys();
    let bad_uid = token(json!({"apiKeyUid": "doggo", "searchRules": ["*"]}), "tamo");
    assert_eq!(
        refused(search(&keys, &bad_uid, None)),
        "Could not decode tenant token, JSON error: UUID parsing failed: invalid character: found `o` at 1 at line 1 column 20."
    );
    let missing_uid = token(json!({"searchRules": ["*"]}), "tamo");
    assert_eq!(
        refused(search(&keys, &missing_uid, None)),
        "Could not decode tenant token, JSON error: missing field `apiKeyUid` at line 1 column 21."
    );
}

#[test]
fn index_refusals_name_the_token_or_hide_the_parent_key() {
    let keys = keys();
    let tenant = token(
        json!({"searchRules": ["doggo", "catto"], "apiKeyUid": uid(1)}),
        &parent_key(1),
    );
    assert_eq!(
        refused(search(&keys, &tenant, Some("dog"))),
        "The provided tenant token cannot acces the index `dog`, allowed indexes are [\"catto\", \"doggo\"]."
    );
    assert_eq!(
        refused(search(&keys, &tenant, Some("doggo"))),
        "The API key used to generate this tenant token cannot acces the index `doggo`."
    );
}

#[test]
fn a_valid_token_carries_its_rules_to_the_route() {
    let keys = keys();
    let tenant = token(
        json!({"searchRules": {"sal*": {"filter": "color = blue"}, "sales": {"filter": ["a = 1", "b = 2"]}, "products": null, "movies": {}}, "apiKeyUid": uid(2)}),
        &parent_key(2),
    );
    let context = search(&keys, &tenant, Some("sales")).expect("search succeeds");
    assert!(context.is_tenant_token());
    assert_eq!(context.key_uid(), Some(uid(2)));
    // The exact pattern wins over the prefix.
    assert_eq!(
        context
            .index_search_rules("sales")
            .expect("index_search_rules succeeds")
            .filter,
        Some(json!(["a = 1", "b = 2"]))
    );
    assert_eq!(
        context
            .index_search_rules("salt")
            .expect("index_search_rules succeeds")
            .filter,
        Some(json!("color = blue"))
    );
    assert_eq!(
        context
            .index_search_rules("products")
            .expect("index_search_rules succeeds")
            .filter,
        None
    );
    assert_eq!(
        context
            .index_search_rules("movies")
            .expect("index_search_rules succeeds")
            .filter,
        None
    );
    assert_eq!(context.index_search_rules("other"), None);
    assert!(!context.all_indexes_authorized());
    // Multi-search (no index in the path) authenticates; routes check each query's index.
    let multi = search(&keys, &tenant, None).expect("search succeeds");
    assert!(multi.is_index_authorized("salt") && !multi.is_index_authorized("other"));
}

#[test]
fn the_longest_prefix_wins_among_prefixes() {
    let keys = keys();
    let tenant = token(
        json!({"searchRules": {"*": {"filter": "a"}, "sa*": {"filter": "b"}, "sal*": {"filter": "c"}}, "apiKeyUid": uid(2)}),
        &parent_key(2),
    );
    let context = search(&keys, &tenant, Some("sales")).expect("search succeeds");
    assert_eq!(
        context
            .index_search_rules("sales")
            .expect("index_search_rules succeeds")
            .filter,
        Some(json!("c"))
    );
    assert_eq!(
        context
            .index_search_rules("sam")
            .expect("index_search_rules succeeds")
            .filter,
        Some(json!("b"))
    );
    assert_eq!(
        context
            .index_search_rules("x")
            .expect("index_search_rules succeeds")
            .filter,
        Some(json!("a"))
    );
    assert!(context.all_indexes_authorized());
}

#[test]
fn every_hmac_algorithm_is_accepted() {
    let keys = keys();
    for algorithm in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
        let tenant = sign_tenant_token(
            &json!({"searchRules": ["*"], "apiKeyUid": uid(2)}),
            &parent_key(2),
            algorithm,
        )
        .expect("sign_tenant_token succeeds");
        assert!(search(&keys, &tenant, Some("x")).is_ok(), "{algorithm:?}");
    }
}

/// A token with any header, signed (HMAC-SHA256) with `secret`.
fn handmade_token(header: Value, claims: Value, secret: &str) -> String {
    use hmac::{Hmac, Mac};
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .expect("new_from_slice succeeds");
    mac.update(message.as_bytes());
    format!(
        "{message}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}

#[test]
fn other_algorithms_are_refused() {
    let keys = keys();
    let claims = json!({"searchRules": ["*"], "apiKeyUid": uid(2)});
    let rsa = handmade_token(
        json!({"alg": "RS256", "typ": "JWT"}),
        claims.clone(),
        &parent_key(2),
    );
    assert_eq!(
        refused(search(&keys, &rsa, Some("x"))),
        "Could not decode tenant token, InvalidAlgorithm."
    );
    let none = handmade_token(json!({"alg": "none"}), claims, &parent_key(2));
    let message = refused(search(&keys, &none, Some("x")));
    assert!(
        message.starts_with("Could not decode tenant token, JSON error: unknown variant `none`"),
        "{message}"
    );
}

#[test]
fn expired_tokens_say_until_when() {
    let keys = keys();
    let exp = NOW.unix_timestamp() + 60;
    let tenant = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(2), "exp": exp}),
        &parent_key(2),
    );
    assert!(search(&keys, &tenant, Some("x")).is_ok());
    let at_exp = NOW + time::Duration::seconds(60);
    assert!(
        search_at(&keys, &tenant, Some("x"), at_exp).is_ok(),
        "valid up to exp included"
    );
    let after = NOW + time::Duration::seconds(61);
    assert_eq!(
        refused(search_at(&keys, &tenant, Some("x"), after)),
        format!(
            "Tenant token expired. Was valid up to `{exp}` and we're now `{}`.",
            exp + 1
        )
    );
}

#[test]
fn ill_typed_or_audience_claims_are_refused() {
    let keys = keys();
    let float_exp = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(2), "exp": 1.5e10}),
        &parent_key(2),
    );
    let message = refused(search(&keys, &float_exp, Some("x")));
    assert!(
        message
            .starts_with("Could not decode tenant token, JSON error: invalid type: floating point"),
        "{message}"
    );
    let audience = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(2), "aud": "me"}),
        &parent_key(2),
    );
    assert_eq!(
        refused(search(&keys, &audience, Some("x"))),
        "Could not decode tenant token, InvalidAudience."
    );
    let extra = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(2), "nbf": 9_999_999_999u64, "x": 1}),
        &parent_key(2),
    );
    assert!(
        search(&keys, &extra, Some("x")).is_ok(),
        "extra claims and nbf are ignored"
    );
}

#[test]
fn tampered_tokens_fail_the_signature() {
    let keys = keys();
    let tenant = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(2)}),
        &parent_key(2),
    );
    let (signed, signature) = tenant.rsplit_once('.').expect("rsplit_once succeeds");
    let mut forged_signature = signature.to_string();
    let last = forged_signature.pop().expect("pop succeeds");
    forged_signature.push(if last == 'A' { 'B' } else { 'A' });
    let forged = format!("{signed}.{forged_signature}");
    assert_eq!(
        refused(search(&keys, &forged, Some("x"))),
        "Could not decode tenant token, InvalidSignature."
    );
}

#[test]
fn the_parent_key_must_exist_hold_search_and_be_unexpired() {
    let keys = keys();
    let claims = |number: u128| json!({"searchRules": ["*"], "apiKeyUid": uid(number)});
    let unknown = token(claims(99), &parent_key(99));
    assert_eq!(
        refused(search(&keys, &unknown, Some("x"))),
        "The provided API key is invalid."
    );
    let no_search = token(claims(3), &parent_key(3));
    assert_eq!(
        refused(search(&keys, &no_search, Some("x"))),
        "The provided API key is invalid."
    );
    let expiring = token(claims(4), &parent_key(4));
    assert!(search(&keys, &expiring, Some("x")).is_ok());
    let later = NOW + time::Duration::seconds(10);
    assert_eq!(
        refused(search_at(&keys, &expiring, Some("x"), later)),
        "The provided API key is invalid."
    );
}

#[test]
fn tokens_work_on_chat_completions_but_not_elsewhere() {
    let keys = keys();
    let tenant = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(5)}),
        &parent_key(5),
    );
    let header = format!("Bearer {tenant}").into_bytes();
    let chat = AuthRequest {
        authorization: Some(&header),
        action: Action::ChatCompletions,
        index_uid: None,
    };
    assert!(
        authenticate(&keys, &chat, NOW)
            .expect("authenticate succeeds")
            .is_tenant_token()
    );
    let admin_token = token(
        json!({"searchRules": ["*"], "apiKeyUid": uid(2)}),
        &parent_key(2),
    );
    let header = format!("Bearer {admin_token}").into_bytes();
    let documents = AuthRequest {
        authorization: Some(&header),
        action: Action::DocumentsGet,
        index_uid: Some("x"),
    };
    assert_eq!(
        authenticate(&keys, &documents, NOW),
        Err(AuthenticationError::InvalidApiKey)
    );
}

#[test]
fn non_jwt_tokens_fall_back_to_api_keys_on_search() {
    let keys = keys();
    assert!(search(&keys, &parent_key(1), Some("dog")).is_ok());
    for not_a_jwt in ["a.b", "kefir", ""] {
        assert_eq!(
            refused(search(&keys, not_a_jwt, Some("dog"))),
            "The provided API key is invalid."
        );
    }
    // Two dots or more make a JWT shape: its header is then decoded (and fails here).
    assert_eq!(
        refused(search(&keys, "a.b.c.d", Some("dog"))),
        "Could not decode tenant token, Base64 error: Invalid symbol 46, offset 1.."
    );
}

#[test]
fn filters_merge_as_an_and_of_arrays_query_first() {
    assert_eq!(merge_filters(None, None), None);
    assert_eq!(
        merge_filters(Some(json!("a = 1")), None),
        Some(json!("a = 1"))
    );
    assert_eq!(merge_filters(None, Some(json!(["b"]))), Some(json!(["b"])));
    assert_eq!(
        merge_filters(Some(json!("a = 1")), Some(json!("b = 2"))),
        Some(json!(["a = 1", "b = 2"]))
    );
    assert_eq!(
        merge_filters(Some(json!(["a", ["b", "c"]])), Some(json!("d"))),
        Some(json!(["a", ["b", "c"], "d"]))
    );
    assert_eq!(
        merge_filters(Some(json!("a")), Some(json!(["d", "e"]))),
        Some(json!(["a", "d", "e"]))
    );
}
