//! Chat workspaces (experimental feature `chatCompletions`): each workspace names the LLM a
//! chat completion talks to (`source`, `baseUrl`, `apiKey`, `orgId`, `projectId`,
//! `apiVersion`, `deploymentId`) and its [`ChatCompletionPrompts`], as Meilisearch 1.41 keeps them.
//! A workspace is created by its first settings `PATCH`, reset to the defaults by
//! `DELETE /chats/{uid}/settings` and removed by `DELETE /chats/{uid}`.
//!
//! Invariants:
//! - the serde form of [`ChatCompletionSettings`] is Meilisearch's (every optional field
//!   present, `null` when unset): the answers of the settings routes, the persisted file and
//!   dumps use it;
//! - a stored workspace passed [`ChatCompletionSettings::validate`] (`azureOpenAi` has
//!   `baseUrl`, `deploymentId` and `apiVersion`; `vLlm` has `baseUrl`);
//! - the API key leaves the server only masked ([`ChatCompletionSettings::masked`]), except
//!   in dumps and snapshots.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::chat_prompts::ChatCompletionPrompts;
use super::chat_prompts::{
    DEFAULT_SEARCH_DESCRIPTION_PROMPT, DEFAULT_SEARCH_FILTER_PARAM_PROMPT,
    DEFAULT_SEARCH_INDEX_UID_PARAM_PROMPT, DEFAULT_SEARCH_Q_PARAM_PROMPT, DEFAULT_SYSTEM_PROMPT,
};
use crate::auth::masked_secret::masked_secret;
use crate::errors::{Code, ResponseError};
use crate::settings::setting::Setting;

/// File (in the data directory) that holds every workspace.
pub const CHAT_WORKSPACES_FILE_NAME: &str = "chat-workspaces.json";

/// The discussion `feature_not_enabled` points to for chats.
pub const CHAT_COMPLETIONS_LINK: &str = "https://github.com/orgs/meilisearch/discussions/835";

/// Every workspace of the instance, by uid (the order listings and dumps follow).
pub type ChatWorkspaces = BTreeMap<String, ChatCompletionSettings>;

/// The LLM service a workspace talks to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum ChatCompletionSource {
    #[default]
    OpenAi,
    Mistral,
    AzureOpenAi,
    VLlm,
}

/// The role the system prompt is given under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemRole {
    System,
    Developer,
}

/// Model name prefixes of OpenAI's models that still take the `system` role.
const SYSTEM_ROLE_MODELS: [&str; 6] = [
    "gpt-3.5",
    "gpt-4",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-4o",
    "chatgpt-4o",
];

impl ChatCompletionSource {
    /// The role of the system prompt for `model`: OpenAI's newer models (on OpenAI or Azure)
    /// take `developer`, everything else `system`.
    pub fn system_role(self, model: &str) -> SystemRole {
        match self {
            ChatCompletionSource::OpenAi | ChatCompletionSource::AzureOpenAi
                if !is_system_role_model(model) =>
            {
                SystemRole::Developer
            }
            _ => SystemRole::System,
        }
    }

    /// The base URL used when the workspace sets none.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ChatCompletionSource::OpenAi => Some("https://api.openai.com/v1/"),
            ChatCompletionSource::Mistral => Some("https://api.mistral.ai/v1/"),
            ChatCompletionSource::AzureOpenAi | ChatCompletionSource::VLlm => None,
        }
    }

    /// Whether the model's answers carry token usage when asked (`stream_options`).
    pub fn reports_usage(self) -> bool {
        matches!(
            self,
            ChatCompletionSource::OpenAi | ChatCompletionSource::AzureOpenAi
        )
    }
}

/// Whether `model` is one of the models named by a prefix of [`SYSTEM_ROLE_MODELS`],
/// alone or followed by `-`.
fn is_system_role_model(model: &str) -> bool {
    SYSTEM_ROLE_MODELS.iter().any(|prefix| {
        model
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    })
}

/// One workspace's settings, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCompletionSettings {
    pub source: ChatCompletionSource,
    #[serde(default)]
    pub org_id: Option<String>,
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub deployment_id: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub prompts: ChatCompletionPrompts,
}

impl ChatCompletionSettings {
    /// The settings as the routes show them: the API key masked.
    pub fn masked(&self) -> ChatCompletionSettings {
        let mut shown = self.clone();
        if let Some(key) = shown.api_key.as_mut() {
            *key = masked_secret(key);
        }
        shown
    }

    /// Refuses settings the source cannot work with.
    pub fn validate(&self) -> Result<(), ResponseError> {
        let refusal = match self.source {
            ChatCompletionSource::AzureOpenAi
                if self.base_url.is_none()
                    || self.deployment_id.is_none()
                    || self.api_version.is_none() =>
            {
                "azureOpenAi requires setting a valid `baseUrl`, `deploymentId`, and `apiVersion`"
            }
            ChatCompletionSource::VLlm if self.base_url.is_none() => {
                "vLlm requires setting a valid `baseUrl`"
            }
            _ => return Ok(()),
        };
        Err(ResponseError::new(Code::BadRequest, refusal))
    }
}

/// The body of `PATCH /chats/{uid}/settings`: each field absent (kept), `null` (reset) or
/// given. Decoded with serde, as Meilisearch decodes it (its messages are serde's).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChatWorkspaceSettings {
    #[serde(default)]
    pub source: Setting<ChatCompletionSource>,
    #[serde(default)]
    pub org_id: Setting<String>,
    #[serde(default)]
    pub project_id: Setting<String>,
    #[serde(default)]
    pub api_version: Setting<String>,
    #[serde(default)]
    pub deployment_id: Setting<String>,
    #[serde(default)]
    pub base_url: Setting<String>,
    #[serde(default)]
    pub api_key: Setting<String>,
    #[serde(default)]
    pub prompts: Setting<ChatPrompts>,
}

/// `prompts` of a settings patch (named as in Meilisearch: serde's messages show the name).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChatPrompts {
    #[serde(default)]
    pub system: Setting<String>,
    #[serde(default)]
    pub search_description: Setting<String>,
    #[serde(default)]
    pub search_q_param: Setting<String>,
    #[serde(default)]
    pub search_filter_param: Setting<String>,
    #[serde(default)]
    pub search_index_uid_param: Setting<String>,
}

impl ChatWorkspaceSettings {
    /// The settings this patch makes of `old` (the defaults for a new workspace).
    pub fn applied_to(self, old: ChatCompletionSettings) -> ChatCompletionSettings {
        ChatCompletionSettings {
            source: pick(self.source, old.source, ChatCompletionSource::default),
            org_id: optional(self.org_id, old.org_id),
            project_id: optional(self.project_id, old.project_id),
            api_version: optional(self.api_version, old.api_version),
            deployment_id: optional(self.deployment_id, old.deployment_id),
            base_url: optional(self.base_url, old.base_url),
            api_key: optional(self.api_key, old.api_key),
            prompts: match self.prompts {
                Setting::Set(patch) => patch.applied_to(old.prompts),
                Setting::Reset => ChatCompletionPrompts::default(),
                Setting::NotSet => old.prompts,
            },
        }
    }
}

impl ChatPrompts {
    fn applied_to(self, old: ChatCompletionPrompts) -> ChatCompletionPrompts {
        let text = |setting: Setting<String>, old: String, default: &str| {
            pick(setting, old, || default.to_owned())
        };
        ChatCompletionPrompts {
            system: text(self.system, old.system, DEFAULT_SYSTEM_PROMPT),
            search_description: text(
                self.search_description,
                old.search_description,
                DEFAULT_SEARCH_DESCRIPTION_PROMPT,
            ),
            search_q_param: text(
                self.search_q_param,
                old.search_q_param,
                DEFAULT_SEARCH_Q_PARAM_PROMPT,
            ),
            search_filter_param: text(
                self.search_filter_param,
                old.search_filter_param,
                DEFAULT_SEARCH_FILTER_PARAM_PROMPT,
            ),
            search_index_uid_param: text(
                self.search_index_uid_param,
                old.search_index_uid_param,
                DEFAULT_SEARCH_INDEX_UID_PARAM_PROMPT,
            ),
        }
    }
}

/// The given value, the default on a reset, the old value when absent.
fn pick<T>(setting: Setting<T>, old: T, default: impl FnOnce() -> T) -> T {
    match setting {
        Setting::Set(value) => value,
        Setting::Reset => default(),
        Setting::NotSet => old,
    }
}

/// An optional field: given, removed on a reset, kept when absent.
fn optional<T>(setting: Setting<T>, old: Option<T>) -> Option<T> {
    match setting {
        Setting::Set(value) => Some(value),
        Setting::Reset => None,
        Setting::NotSet => old,
    }
}

/// A change of the workspaces, applied on the control core.
#[derive(Debug)]
pub enum WorkspaceChange {
    /// `PATCH /chats/{uid}/settings`: creates the workspace when absent.
    Patch {
        uid: String,
        patch: Box<ChatWorkspaceSettings>,
    },
    /// `DELETE /chats/{uid}/settings`: the defaults, for an existing workspace.
    Reset { uid: String },
    /// `DELETE /chats/{uid}`.
    Delete { uid: String },
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceOutcome {
    /// The workspace's settings after a patch or a reset.
    Settings(Box<ChatCompletionSettings>),
    Deleted,
}

/// Applies `change` to `workspaces`: the new workspaces and the outcome, or the refusal.
pub fn apply_change(
    workspaces: &ChatWorkspaces,
    change: WorkspaceChange,
) -> Result<(ChatWorkspaces, WorkspaceOutcome), ResponseError> {
    let mut next = workspaces.clone();
    let outcome = match change {
        WorkspaceChange::Patch { uid, patch } => {
            let old = workspaces.get(&uid).cloned().unwrap_or_default();
            let settings = patch.applied_to(old);
            settings.validate()?;
            next.insert(uid, settings.clone());
            WorkspaceOutcome::Settings(Box::new(settings))
        }
        WorkspaceChange::Reset { uid } => {
            if !workspaces.contains_key(&uid) {
                return Err(settings_not_found(&uid));
            }
            let settings = ChatCompletionSettings::default();
            next.insert(uid, settings.clone());
            WorkspaceOutcome::Settings(Box::new(settings))
        }
        WorkspaceChange::Delete { uid } => {
            if next.remove(&uid).is_none() {
                return Err(chat_not_found(&uid));
            }
            WorkspaceOutcome::Deleted
        }
    };
    Ok((next, outcome))
}

/// 404 `chat_not_found` as the settings and completion routes word it.
pub fn settings_not_found(uid: &str) -> ResponseError {
    ResponseError::new(Code::ChatNotFound, format!("Chat `{uid}` not found"))
}

/// 404 `chat_not_found` as `GET`/`DELETE /chats/{uid}` word it.
pub fn chat_not_found(uid: &str) -> ResponseError {
    ResponseError::new(Code::ChatNotFound, format!("chat {uid} not found"))
}

/// 400 `feature_not_enabled` for `action` while `chatCompletions` is off.
pub fn not_enabled(action: &str) -> ResponseError {
    ResponseError::feature_not_enabled(action, "chat completions", CHAT_COMPLETIONS_LINK)
}

/// Reads the persisted workspaces (none when never saved).
pub fn load_workspaces(data_directory: &std::path::Path) -> Result<ChatWorkspaces, String> {
    let path = data_directory.join(CHAT_WORKSPACES_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(ChatWorkspaces::new()),
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(json: &str) -> ChatWorkspaceSettings {
        serde_json::from_str(json).expect("a valid patch")
    }

    #[test]
    fn a_patch_keeps_absent_fields_and_resets_null_ones() {
        let first = patch(r#"{"source":"mistral","apiKey":"k","prompts":{"system":"s"}}"#)
            .applied_to(ChatCompletionSettings::default());
        assert_eq!(first.source, ChatCompletionSource::Mistral);
        assert_eq!(first.prompts.system, "s");
        assert_eq!(first.prompts.search_q_param, DEFAULT_SEARCH_Q_PARAM_PROMPT);
        let second = patch(r#"{"apiKey":null,"prompts":{"system":null}}"#).applied_to(first);
        assert_eq!(second.source, ChatCompletionSource::Mistral);
        assert_eq!(second.api_key, None);
        assert_eq!(second.prompts.system, DEFAULT_SYSTEM_PROMPT);
    }

    #[test]
    fn sources_needing_urls_are_refused_without_them() {
        let vllm = patch(r#"{"source":"vLlm"}"#).applied_to(ChatCompletionSettings::default());
        assert_eq!(
            vllm.validate().expect_err("no url").message,
            "vLlm requires setting a valid `baseUrl`"
        );
        let azure = patch(r#"{"source":"azureOpenAi","baseUrl":"u","deploymentId":"d"}"#)
            .applied_to(ChatCompletionSettings::default());
        assert!(azure.validate().is_err());
    }

    #[test]
    fn newer_openai_models_take_the_developer_role() {
        let openai = ChatCompletionSource::OpenAi;
        assert_eq!(openai.system_role("gpt-4o"), SystemRole::System);
        assert_eq!(openai.system_role("gpt-4o-mini"), SystemRole::System);
        assert_eq!(openai.system_role("gpt-4omini"), SystemRole::Developer);
        assert_eq!(openai.system_role("o3-mini"), SystemRole::Developer);
        assert_eq!(
            ChatCompletionSource::Mistral.system_role("o3"),
            SystemRole::System
        );
    }

    #[test]
    fn the_stored_form_is_meilisearch_s() {
        let text = serde_json::to_string(&ChatCompletionSettings::default()).expect("json");
        assert!(
            text.starts_with(r#"{"source":"openAi","orgId":null,"projectId":null,"apiVersion":null,"deploymentId":null,"baseUrl":null,"apiKey":null,"prompts":{"system":"#),
            "{text}"
        );
    }
}
