//! The key store: default keys, create / list / get / update / delete with Meilisearch's
//! answers, immutable versioned snapshots, and durable reload from the JSON key file.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use coresearch::auth::key::derive_key_string;
use coresearch::auth::persistence::KEY_FILE_NAME;
use coresearch::auth::{
    Action, FieldChange, JsonFileKeyPersistence, Key, KeyPersistence, KeyStore, KeyStoreError,
    MemoryKeyPersistence, PatchApiKey, PersistenceError, parse_create_api_key,
};
use coresearch::errors::Code;
use serde_json::json;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

const NOW: OffsetDateTime = datetime!(2026-11-21 15:00:00 UTC);
const MASTER_KEY: &str = "MASTER_KEY";

fn memory_store(master_key: Option<&str>) -> KeyStore {
    KeyStore::open(
        Box::new(MemoryKeyPersistence::default()),
        master_key.map(str::to_string),
        NOW,
    )
    .expect("open succeeds")
}

fn create(
    store: &mut KeyStore,
    body: serde_json::Value,
    at: OffsetDateTime,
) -> Result<coresearch::auth::KeyView, KeyStoreError> {
    store.create(
        parse_create_api_key(&body, at).expect("parse_create_api_key succeeds"),
        at,
    )
}

fn uid(number: u128) -> Uuid {
    Uuid::from_u128(number)
}

/// A fresh directory under the system temporary directory, unique per test.
fn temporary_directory(name: &str) -> PathBuf {
    let directory =
        std::env::temp_dir().join(format!("coresearch-auth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).expect("create_dir_all succeeds");
    directory
}

#[test]
fn an_empty_store_gets_the_four_default_keys_even_without_master_key() {
    for master_key in [None, Some(MASTER_KEY)] {
        let store = memory_store(master_key);
        let keys = store.snapshot();
        assert_eq!(keys.len(), 4);
        assert_eq!(keys.version(), 0);
        let page = keys.list(0, 20);
        let names: Vec<_> = page
            .results
            .iter()
            .map(|view| view.name.clone().expect("clone succeeds"))
            .collect();
        assert_eq!(
            names,
            [
                "Default Search API Key",
                "Default Admin API Key",
                "Default Read-Only Admin API Key",
                "Default Chat API Key"
            ]
        );
        for view in &page.results {
            assert_eq!(view.indexes, ["*"]);
            assert_eq!(view.expires_at, None);
            match master_key {
                None => assert_eq!(view.key, ""),
                Some(master_key) => {
                    assert_eq!(
                        view.key,
                        derive_key_string(
                            master_key,
                            Uuid::parse_str(&view.uid).expect("parse_str succeeds")
                        )
                    )
                }
            }
        }
    }
}

#[test]
fn a_non_empty_store_gets_no_default_keys() {
    let mut persistence = MemoryKeyPersistence::default();
    let key = Key {
        uid: uid(7),
        name: None,
        description: None,
        actions: vec![Action::Search],
        indexes: vec![],
        expires_at: None,
        created_at: NOW,
        updated_at: NOW,
    };
    persistence.store(&[&key]).expect("store succeeds");
    let store =
        KeyStore::open(Box::new(persistence), Some(MASTER_KEY.into()), NOW).expect("open succeeds");
    assert_eq!(store.snapshot().keys().collect::<Vec<_>>(), [&key]);
}

#[test]
fn create_answers_the_key_object_and_publishes_a_new_version() {
    let mut store = memory_store(Some(MASTER_KEY));
    let before = store.snapshot();
    let view = create(
        &mut store,
        json!({"uid": Uuid::nil(), "actions": ["search"], "indexes": ["dog"], "expiresAt": null}),
        NOW,
    )
    .expect("create succeeds");
    assert_eq!(
        view.to_json(),
        r#"{"name":null,"description":null,"key":"aeb94973e0b6e912d94165430bbe87dee91a7c4f891ce19050c3910ec96977e9","uid":"00000000-0000-0000-0000-000000000000","actions":["search"],"indexes":["dog"],"expiresAt":null,"createdAt":"2026-11-21T15:00:00Z","updatedAt":"2026-11-21T15:00:00Z"}"#
    );
    let after = store.snapshot();
    assert_eq!(after.version(), 1);
    assert_eq!(after.len(), 5);
    assert_eq!(before.len(), 4, "an old snapshot never changes");
    assert!(before.get(Uuid::nil()).is_none());
}

#[test]
fn creating_an_existing_uid_is_a_conflict() {
    let mut store = memory_store(Some(MASTER_KEY));
    let body = json!({"uid": uid(1), "actions": ["*"], "indexes": ["*"], "expiresAt": null});
    create(&mut store, body.clone(), NOW).expect("create succeeds");
    let error = create(&mut store, body, NOW).unwrap_err();
    assert_eq!(error.code(), Code::ApiKeyAlreadyExists);
    assert_eq!(
        error.to_string(),
        "`uid` field value `00000000-0000-0000-0000-000000000001` is already an existing API key."
    );
    assert_eq!(store.snapshot().version(), 1);
}

#[test]
fn listing_is_newest_first_and_paginated() {
    let mut store = memory_store(Some(MASTER_KEY));
    for number in 1..=3u128 {
        let at = NOW + Duration::seconds(number as i64);
        create(
            &mut store,
            json!({"uid": uid(number), "actions": ["search"], "indexes": ["*"], "expiresAt": null}),
            at,
        )
        .expect("create succeeds");
    }
    let keys = store.snapshot();
    let page = keys.list(0, 2);
    assert_eq!(page.total, 7);
    assert_eq!((page.offset, page.limit), (0, 2));
    let uids: Vec<_> = page.results.iter().map(|view| view.uid.clone()).collect();
    assert_eq!(uids, [uid(3).to_string(), uid(2).to_string()]);
    let tail = keys.list(6, 20);
    assert_eq!(tail.results.len(), 1);
    assert_eq!(
        tail.results[0].name.as_deref(),
        Some("Default Chat API Key")
    );
    assert!(keys.list(10, 20).results.is_empty());
    let json = serde_json::to_string(&keys.list(0, 0)).expect("to_string succeeds");
    assert_eq!(json, r#"{"results":[],"offset":0,"limit":0,"total":7}"#);
}

#[test]
fn get_accepts_a_uid_in_any_form_or_the_key_string_in_either_case() {
    let mut store = memory_store(Some(MASTER_KEY));
    create(
        &mut store,
        json!({"uid": Uuid::nil(), "actions": ["search"], "indexes": ["*"], "expiresAt": null}),
        NOW,
    )
    .expect("create succeeds");
    let keys = store.snapshot();
    let key_string = derive_key_string(MASTER_KEY, Uuid::nil());
    for reference in [
        "00000000-0000-0000-0000-000000000000".to_string(),
        "00000000000000000000000000000000".to_string(),
        key_string.clone(),
        key_string.to_uppercase(),
    ] {
        assert_eq!(
            keys.get_view(&reference).expect("get_view succeeds").uid,
            Uuid::nil().to_string(),
            "{reference}"
        );
    }
}

#[test]
fn unknown_keys_are_not_found_with_the_reference_echoed() {
    let store = memory_store(Some(MASTER_KEY));
    let keys = store.snapshot();
    let key_string = "d0552b41d0552b41536279a0ad88bd595327b96f01176a60c2243e906c52ac02375f9bc4";
    let error = keys.get_view(key_string).unwrap_err();
    assert_eq!(error.code(), Code::ApiKeyNotFound);
    assert_eq!(
        error.to_string(),
        format!("API key `{key_string}` not found.")
    );
    let error = keys
        .get_view("0000000000000000000000000000000A")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "API key `00000000-0000-0000-0000-00000000000a` not found."
    );
}

#[test]
fn without_master_key_no_key_string_resolves() {
    let store = memory_store(None);
    let keys = store.snapshot();
    let some_uid = Uuid::parse_str(&keys.list(0, 1).results[0].uid).expect("parse_str succeeds");
    let would_be = derive_key_string(MASTER_KEY, some_uid);
    assert!(keys.uid_for_key_string(&would_be).is_none());
    assert!(keys.get_view(&some_uid.to_string()).is_ok());
}

#[test]
fn update_changes_only_name_and_description_and_bumps_updated_at() {
    let mut store = memory_store(Some(MASTER_KEY));
    create(
        &mut store,
        json!({"uid": uid(9), "name": "old", "description": "keep", "actions": ["search"], "indexes": ["a*"], "expiresAt": "2050-01-01"}),
        NOW,
    )
    .expect("create succeeds");
    let later = NOW + Duration::minutes(5);
    let patch = PatchApiKey {
        name: FieldChange::Set("new".into()),
        description: FieldChange::Keep,
    };
    let view = store
        .update(&uid(9).to_string(), patch, later)
        .expect("update succeeds");
    assert_eq!(view.name.as_deref(), Some("new"));
    assert_eq!(view.description.as_deref(), Some("keep"));
    assert_eq!(view.created_at, "2026-11-21T15:00:00Z");
    assert_eq!(view.updated_at, "2026-11-21T15:05:00Z");
    assert_eq!(view.expires_at.as_deref(), Some("2050-01-01T00:00:00Z"));
    assert_eq!(view.actions, ["search"]);
    let cleared = store
        .update(
            &derive_key_string(MASTER_KEY, uid(9)),
            PatchApiKey {
                name: FieldChange::Keep,
                description: FieldChange::Clear,
            },
            later,
        )
        .expect("update succeeds");
    assert_eq!(cleared.description, None);
    assert_eq!(cleared.name.as_deref(), Some("new"));
    assert_eq!(store.snapshot().version(), 3);
    let missing = store.update(&uid(10).to_string(), PatchApiKey::default(), later);
    assert_eq!(missing.unwrap_err().code(), Code::ApiKeyNotFound);
}

#[test]
fn delete_removes_the_key_and_its_key_string() {
    let mut store = memory_store(Some(MASTER_KEY));
    create(
        &mut store,
        json!({"uid": uid(5), "actions": ["search"], "indexes": ["*"], "expiresAt": null}),
        NOW,
    )
    .expect("create succeeds");
    let key_string = derive_key_string(MASTER_KEY, uid(5));
    assert_eq!(
        store.snapshot().uid_for_key_string(&key_string),
        Some(uid(5))
    );
    store.delete(&key_string).expect("delete succeeds");
    let keys = store.snapshot();
    assert!(keys.get(uid(5)).is_none());
    assert!(keys.uid_for_key_string(&key_string).is_none());
    let error = store.delete(&uid(5).to_string()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "API key `00000000-0000-0000-0000-000000000005` not found."
    );
}

#[test]
fn keys_survive_a_reopen_from_the_json_file() {
    let directory = temporary_directory("reload");
    let open = || {
        KeyStore::open(
            Box::new(JsonFileKeyPersistence::new(&directory)),
            Some(MASTER_KEY.into()),
            NOW,
        )
        .expect("open succeeds")
    };
    let mut store = open();
    let created_at = datetime!(2026-11-21 15:00:01.123456789 UTC);
    create(
        &mut store,
        json!({"uid": uid(3), "name": "n", "actions": ["documents.*", "search"], "indexes": ["a*", "b"], "expiresAt": "2050-11-13T01:00:00+01:00"}),
        created_at,
    )
    .expect("create succeeds");
    let before: Vec<Key> = store.snapshot().keys().cloned().collect();
    drop(store);
    assert!(directory.join("auth").join(KEY_FILE_NAME).exists());
    assert!(!directory.join("auth").join("keys.json.tmp").exists());
    let reopened = open();
    let after: Vec<Key> = reopened.snapshot().keys().cloned().collect();
    assert_eq!(before, after);
    let view = reopened
        .snapshot()
        .get_view(&uid(3).to_string())
        .expect("get_view succeeds");
    assert_eq!(
        view.expires_at.as_deref(),
        Some("2050-11-13T01:00:00+01:00")
    );
    assert_eq!(view.created_at, "2026-11-21T15:00:01.123456789Z");
    std::fs::remove_dir_all(&directory).expect("remove_dir_all succeeds");
}

#[test]
fn deleting_every_key_brings_the_defaults_back_on_reopen() {
    let directory = temporary_directory("defaults-again");
    let open = || {
        KeyStore::open(Box::new(JsonFileKeyPersistence::new(&directory)), None, NOW)
            .expect("open succeeds")
    };
    let mut store = open();
    let uids: Vec<Uuid> = store.snapshot().keys().map(|key| key.uid).collect();
    for key_uid in &uids {
        store.delete(&key_uid.to_string()).expect("delete succeeds");
    }
    assert!(store.snapshot().is_empty());
    drop(store);
    let reopened = open();
    assert_eq!(reopened.snapshot().len(), 4);
    assert!(
        reopened
            .snapshot()
            .keys()
            .all(|key| !uids.contains(&key.uid))
    );
    std::fs::remove_dir_all(&directory).expect("remove_dir_all succeeds");
}

#[test]
fn a_corrupted_key_file_is_an_error_not_a_silent_reset() {
    let directory = temporary_directory("corrupted");
    let auth_directory = directory.join("auth");
    std::fs::create_dir_all(&auth_directory).expect("create_dir_all succeeds");
    for content in [
        "not json",
        r#"{"formatVersion":2,"keys":[]}"#,
        r#"{"formatVersion":1,"keys":[{"uid":"00000000-0000-0000-0000-000000000001","name":null,"description":null,"actions":["doggo"],"indexes":[],"expiresAt":null,"createdAt":"2026-11-21T15:00:00Z","updatedAt":"2026-11-21T15:00:00Z"}]}"#,
    ] {
        std::fs::write(auth_directory.join(KEY_FILE_NAME), content).expect("write succeeds");
        let result = KeyStore::open(Box::new(JsonFileKeyPersistence::new(&directory)), None, NOW);
        match result {
            Err(KeyStoreError::Persistence(PersistenceError::Corrupted { .. })) => {}
            Err(other) => panic!("{content}: unexpected error {other}"),
            Ok(_) => panic!("{content}: a corrupted file was accepted"),
        }
    }
    std::fs::remove_dir_all(&directory).expect("remove_dir_all succeeds");
}

/// Persistence that fails every write after the first `successes` ones.
struct FailingPersistence {
    successes: usize,
}

impl KeyPersistence for FailingPersistence {
    fn load(&mut self) -> Result<Vec<Key>, PersistenceError> {
        Ok(Vec::new())
    }

    fn store(&mut self, _keys: &[&Key]) -> Result<(), PersistenceError> {
        if self.successes == 0 {
            return Err(PersistenceError::Io {
                path: PathBuf::from("keys.json"),
                error: std::io::Error::other("disk full"),
            });
        }
        self.successes -= 1;
        Ok(())
    }
}

#[test]
fn a_failed_write_changes_nothing() {
    let mut store = KeyStore::open(
        Box::new(FailingPersistence { successes: 1 }),
        Some(MASTER_KEY.into()),
        NOW,
    )
    .expect("open succeeds");
    let error = create(
        &mut store,
        json!({"uid": uid(1), "actions": ["*"], "indexes": ["*"], "expiresAt": null}),
        NOW,
    )
    .unwrap_err();
    assert_eq!(error.code(), Code::Internal);
    assert_eq!(store.snapshot().version(), 0);
    assert!(store.snapshot().get(uid(1)).is_none());
}

#[test]
fn key_authorization_follows_expanded_actions_patterns_and_expiry() {
    let mut store = memory_store(Some(MASTER_KEY));
    create(
        &mut store,
        json!({"uid": uid(1), "actions": ["documents.*", "*.get"], "indexes": ["sal*", "products"], "expiresAt": "2027-01-01"}),
        NOW,
    )
    .expect("create succeeds");
    create(
        &mut store,
        json!({"uid": uid(2), "actions": ["*"], "indexes": [], "expiresAt": null}),
        NOW,
    )
    .expect("create succeeds");
    let keys = store.snapshot();
    let authorized = |key, action, index| keys.is_key_authorized(uid(key), action, index, NOW);
    assert!(authorized(1, Action::DocumentsAdd, Some("sales")));
    assert!(authorized(1, Action::DocumentsAdd, Some("sal")));
    assert!(authorized(1, Action::SettingsGet, Some("products")));
    assert!(!authorized(1, Action::DocumentsAdd, Some("products-2")));
    assert!(!authorized(1, Action::DocumentsAll, Some("sales")));
    assert!(!authorized(1, Action::SettingsUpdate, Some("sales")));
    assert!(authorized(1, Action::TasksGet, None));
    assert!(!authorized(1, Action::KeysGet, None));
    let expired = datetime!(2027-01-01 00:00:00 UTC);
    assert!(!keys.is_key_authorized(uid(1), Action::DocumentsAdd, Some("sales"), expired));
    // A key without index patterns reaches nothing, whatever its actions.
    assert!(!authorized(2, Action::Version, None));
    assert!(!authorized(2, Action::Search, Some("sales")));
    assert!(!keys.is_key_authorized(uid(42), Action::Search, None, NOW));
}

#[test]
fn replacing_every_key_keeps_the_last_of_duplicate_uids() {
    let mut store = memory_store(Some(MASTER_KEY));
    let key = |name: &str| Key {
        uid: uid(1),
        name: Some(name.to_string()),
        description: None,
        actions: vec![Action::Search],
        indexes: vec![],
        expires_at: None,
        created_at: NOW,
        updated_at: NOW,
    };
    store
        .replace_all(vec![key("first"), key("second")])
        .expect("replace_all succeeds");
    let keys = store.snapshot();
    assert_eq!(keys.len(), 1);
    assert_eq!(
        keys.get(uid(1)).expect("get finds a value").name.as_deref(),
        Some("second")
    );
    assert_eq!(keys.version(), 1);
}

#[test]
fn snapshots_can_be_sent_to_every_core() {
    fn assert_send_and_share<T: Send + Sync>() {}
    assert_send_and_share::<coresearch::auth::KeySet>();
    assert_send_and_share::<coresearch::auth::AuthContext>();
}
