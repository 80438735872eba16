//! The API key model, the derivation of a key's secret string from its uid and the master
//! key, and the key object (`KeyView`) the API answers with.
//!
//! Invariants:
//! - a key's string is never stored: it is `lowercase_hex(HMAC-SHA256(key = master key
//!   bytes, message = the uid as a lowercase hyphenated UUID))`, 64 hex characters, so
//!   changing the master key changes every key string; without a master key it is `""`;
//! - `actions` and `indexes` are kept exactly as given (order, duplicates), the key's real
//!   grants are their expansion ([`ActionSet::expand`]);
//! - the key object's fields are, in order: `name`, `description`, `key`, `uid`, `actions`,
//!   `indexes`, `expiresAt`, `createdAt`, `updatedAt`.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use time::OffsetDateTime;
use uuid::Uuid;

use super::actions::{Action, ActionSet};
use super::expiration::format_rfc3339;
use super::index_pattern::IndexUidPattern;

/// The length of a key secret (an HMAC-SHA256 output), in bytes.
pub const KEY_SECRET_BYTES: usize = 32;

/// A key secret: the raw HMAC whose lowercase hex is the key string.
pub type KeySecret = [u8; KEY_SECRET_BYTES];

/// An API key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub uid: Uuid,
    pub name: Option<String>,
    pub description: Option<String>,
    /// As given at creation (wildcards unexpanded, duplicates kept).
    pub actions: Vec<Action>,
    /// As given at creation.
    pub indexes: Vec<IndexUidPattern>,
    pub expires_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl Key {
    /// The actions the key really holds.
    pub fn granted_actions(&self) -> ActionSet {
        ActionSet::expand(&self.actions)
    }

    /// Whether the key has expired at `now` (a key is valid strictly before `expiresAt`).
    pub fn is_expired(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|expires_at| now >= expires_at)
    }
}

/// The secret of the key with this uid under this master key.
pub fn derive_key_secret(master_key: &str, uid: Uuid) -> KeySecret {
    let mut uid_text = Uuid::encode_buffer();
    let uid_text = uid.hyphenated().encode_lower(&mut uid_text);
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master_key.as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(uid_text.as_bytes());
    mac.finalize().into_bytes().into()
}

/// The key string (64 lowercase hex characters) of the key with this uid.
pub fn derive_key_string(master_key: &str, uid: Uuid) -> String {
    hex::encode(derive_key_secret(master_key, uid))
}

/// The key object of the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub name: Option<String>,
    pub description: Option<String>,
    /// The key string, or `""` when no master key is set.
    pub key: String,
    pub uid: String,
    pub actions: Vec<&'static str>,
    pub indexes: Vec<String>,
    pub expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl KeyView {
    /// The view of `key` under `master_key`.
    pub fn new(key: &Key, master_key: Option<&str>) -> KeyView {
        KeyView {
            name: key.name.clone(),
            description: key.description.clone(),
            key: master_key
                .map(|master_key| derive_key_string(master_key, key.uid))
                .unwrap_or_default(),
            uid: key.uid.hyphenated().to_string(),
            actions: key
                .actions
                .iter()
                .map(|action| action.wire_name())
                .collect(),
            indexes: key
                .indexes
                .iter()
                .map(|pattern| pattern.to_string())
                .collect(),
            expires_at: key.expires_at.map(format_rfc3339),
            created_at: format_rfc3339(key.created_at),
            updated_at: format_rfc3339(key.updated_at),
        }
    }

    /// The key object as JSON text, keys in wire order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a key view always serializes")
    }
}

/// The default keys Meilisearch 1.41 creates in an empty key store, in creation order
/// (Chat, Read-Only Admin, Admin, Search), with random v4 uids.
pub fn default_keys(now: OffsetDateTime) -> Vec<Key> {
    let defaults: [(&str, &str, &[Action]); 4] = [
        (
            "Default Chat API Key",
            "Use it to chat and search from the frontend",
            &[Action::ChatCompletions, Action::Search],
        ),
        (
            "Default Read-Only Admin API Key",
            "Use it to read information across the whole database. Caution! Do not expose this \
             key on a public frontend",
            &[Action::AllGet, Action::KeysGet],
        ),
        (
            "Default Admin API Key",
            "Use it for anything that is not a search operation. Caution! Do not expose it on a \
             public frontend",
            &[Action::All],
        ),
        (
            "Default Search API Key",
            "Use it to search from the frontend",
            &[Action::Search],
        ),
    ];
    defaults
        .into_iter()
        .map(|(name, description, actions)| Key {
            uid: Uuid::new_v4(),
            name: Some(name.to_string()),
            description: Some(description.to_string()),
            actions: actions.to_vec(),
            indexes: vec![IndexUidPattern::all()],
            expires_at: None,
            created_at: now,
            updated_at: now,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use time::macros::datetime;

    /// HMAC-SHA256 written out from FIPS 198-1 over the `sha2` digest, independent of the
    /// `hmac` crate used by the code under test.
    fn reference_hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        const BLOCK_BYTES: usize = 64;
        let mut block = [0u8; BLOCK_BYTES];
        if key.len() > BLOCK_BYTES {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let inner_pad: Vec<u8> = block.iter().map(|byte| byte ^ 0x36).collect();
        let outer_pad: Vec<u8> = block.iter().map(|byte| byte ^ 0x5c).collect();
        let inner = Sha256::new()
            .chain_update(&inner_pad)
            .chain_update(message)
            .finalize();
        Sha256::new()
            .chain_update(&outer_pad)
            .chain_update(inner)
            .finalize()
            .into()
    }

    #[test]
    fn key_string_matches_meilisearch_known_answer() {
        // From Meilisearch's own test suite: master key `MASTER_KEY`, nil uid.
        assert_eq!(
            derive_key_string("MASTER_KEY", Uuid::nil()),
            "aeb94973e0b6e912d94165430bbe87dee91a7c4f891ce19050c3910ec96977e9"
        );
    }

    #[test]
    fn key_string_is_hmac_of_hyphenated_lowercase_uid() {
        let uid =
            Uuid::parse_str("01B4BC42-EB33-4041-B481-254D00CCE834").expect("parse_str succeeds");
        let long_master_key = "k".repeat(100);
        for master_key in [
            "MASTER_KEY",
            "a-much-longer-master-key-of-32-bytes",
            &long_master_key,
        ] {
            let expected = reference_hmac_sha256(
                master_key.as_bytes(),
                b"01b4bc42-eb33-4041-b481-254d00cce834",
            );
            assert_eq!(derive_key_secret(master_key, uid), expected);
            assert_eq!(derive_key_string(master_key, uid), hex::encode(expected));
        }
    }

    #[test]
    fn view_has_wire_key_order_and_no_key_without_master_key() {
        let at = datetime!(2024-08-08 17:05:55.791772 UTC);
        let key = Key {
            uid: Uuid::nil(),
            name: None,
            description: Some("d".into()),
            actions: vec![Action::Search, Action::DocumentsAll],
            indexes: vec![IndexUidPattern::parse("dog*").expect("parse succeeds")],
            expires_at: None,
            created_at: at,
            updated_at: at,
        };
        assert_eq!(
            KeyView::new(&key, None).to_json(),
            r#"{"name":null,"description":"d","key":"","uid":"00000000-0000-0000-0000-000000000000","actions":["search","documents.*"],"indexes":["dog*"],"expiresAt":null,"createdAt":"2024-08-08T17:05:55.791772Z","updatedAt":"2024-08-08T17:05:55.791772Z"}"#
        );
        let view = KeyView::new(&key, Some("MASTER_KEY"));
        assert_eq!(
            view.key,
            "aeb94973e0b6e912d94165430bbe87dee91a7c4f891ce19050c3910ec96977e9"
        );
    }

    #[test]
    fn expiry_is_exclusive() {
        let at = datetime!(2050-01-01 00:00:00 UTC);
        let mut key = default_keys(at).remove(0);
        assert!(!key.is_expired(at));
        key.expires_at = Some(at);
        assert!(key.is_expired(at));
        assert!(!key.is_expired(datetime!(2049-12-31 23:59:59 UTC)));
    }

    #[test]
    fn default_keys_are_the_four_of_meilisearch_1_41() {
        let keys = default_keys(datetime!(2026-01-01 00:00:00 UTC));
        let names: Vec<_> = keys
            .iter()
            .map(|key| key.name.as_deref().expect("as_deref succeeds"))
            .collect();
        assert_eq!(
            names,
            [
                "Default Chat API Key",
                "Default Read-Only Admin API Key",
                "Default Admin API Key",
                "Default Search API Key"
            ]
        );
        let actions: Vec<Vec<_>> = keys
            .iter()
            .map(|key| {
                key.actions
                    .iter()
                    .map(|action| action.wire_name())
                    .collect()
            })
            .collect();
        assert_eq!(
            actions,
            [
                vec!["chatCompletions", "search"],
                vec!["*.get", "keys.get"],
                vec!["*"],
                vec!["search"]
            ]
        );
        for key in &keys {
            assert_eq!(key.indexes, [IndexUidPattern::all()]);
            assert_eq!(key.expires_at, None);
            assert_eq!(key.uid.get_version_num(), 4);
        }
        assert_eq!(
            keys[1].description.as_deref(),
            Some(
                "Use it to read information across the whole database. Caution! Do not expose \
                 this key on a public frontend"
            )
        );
    }
}
