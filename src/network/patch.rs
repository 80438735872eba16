//! The body of `PATCH /network`: every field absent (kept), `null` (reset) or given, decoded
//! with Meilisearch's codes (`invalid_network_*`) and messages.
//!
//! Invariants: unknown top-level fields are `bad_request` and list the fields in
//! Meilisearch's order (`remotes`, `shards`, `previousShards`, `self`, `leader`,
//! `previousRemotes`); an unknown field inside a remote is `invalid_network_remotes`, inside
//! a shard `invalid_network_shards`. `previousRemotes` and `previousShards` exist for calls
//! between instances; a user's patch may not carry `previousRemotes`.

use std::collections::BTreeMap;

use deserr::Deserr;

use crate::decode::JsonError;
use crate::errors::codes;
use crate::settings::setting::Setting;

/// One remote of a patch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserr)]
#[deserr(error = JsonError<codes::InvalidNetworkRemotes>, rename_all = camelCase, deny_unknown_fields)]
pub struct RemotePatch {
    #[deserr(default, error = JsonError<codes::InvalidNetworkUrl>)]
    pub url: Setting<String>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkSearchApiKey>)]
    pub search_api_key: Setting<String>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkWriteApiKey>)]
    pub write_api_key: Setting<String>,
}

/// One shard of a patch: its new list of remotes, remotes to add, remotes to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserr)]
#[deserr(error = JsonError<codes::InvalidNetworkShards>, rename_all = camelCase, deny_unknown_fields)]
pub struct ShardPatch {
    #[deserr(default, error = JsonError<codes::InvalidNetworkRemotes>)]
    pub remotes: Setting<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkRemotes>)]
    pub add_remotes: Setting<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkRemotes>)]
    pub remove_remotes: Setting<Vec<String>>,
}

/// Remotes by name, each patched or (`null`) removed.
pub type RemotesPatch = BTreeMap<String, Option<RemotePatch>>;

/// Shards by name, each patched or (`null`) removed.
pub type ShardsPatch = BTreeMap<String, Option<ShardPatch>>;

/// The whole body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct NetworkPatch {
    #[deserr(default, error = JsonError<codes::InvalidNetworkRemotes>)]
    pub remotes: Setting<RemotesPatch>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkShards>)]
    pub shards: Setting<ShardsPatch>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkShards>)]
    pub previous_shards: Setting<ShardsPatch>,
    #[deserr(default, rename = "self", error = JsonError<codes::InvalidNetworkSelf>)]
    pub local: Setting<String>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkLeader>)]
    pub leader: Setting<String>,
    #[deserr(default, error = JsonError<codes::InvalidNetworkRemotes>)]
    pub previous_remotes: Setting<RemotesPatch>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::errors::Code;

    fn decode(body: &str) -> Result<NetworkPatch, crate::errors::ResponseError> {
        crate::decode::decode_json_value::<NetworkPatch, JsonError>(
            serde_json::from_str(body).unwrap(),
        )
    }

    #[test]
    fn an_unknown_top_level_field_lists_the_fields_in_meilisearch_order() {
        let error = decode(r#"{"selfie": "x"}"#).unwrap_err();
        assert_eq!(error.code, Code::BadRequest);
        assert_eq!(
            error.message,
            "Unknown field `selfie`: expected one of `remotes`, `shards`, `previousShards`, `self`, `leader`, `previousRemotes`"
        );
    }

    #[test]
    fn an_unknown_remote_field_is_invalid_network_remotes() {
        let error = decode(r#"{"remotes": {"new": {"url": "http://a", "doggo": 1}}}"#).unwrap_err();
        assert_eq!(error.code, Code::InvalidNetworkRemotes);
        assert_eq!(
            error.message,
            "Unknown field `doggo` inside `.remotes.new`: expected one of `url`, `searchApiKey`, `writeApiKey`"
        );
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let error = decode(r#"{"self": 42}"#).unwrap_err();
        assert_eq!(error.code, Code::InvalidNetworkSelf);
        assert_eq!(
            error.message,
            "Invalid value type at `.self`: expected a string, but found a positive integer: `42`"
        );
    }

    #[test]
    fn null_and_absent_differ() {
        let patch = decode(r#"{"remotes": null, "leader": "a"}"#).unwrap();
        assert_eq!(patch.remotes, Setting::Reset);
        assert_eq!(patch.leader, Setting::Set("a".to_owned()));
        assert_eq!(patch.local, Setting::NotSet);
    }
}
