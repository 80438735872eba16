//! Where the hub is and whether it may be asked: the Hugging Face libraries' own variables,
//! read when a model is fetched (as the cache directory is), not at start-up.
//!
//! - `HF_ENDPOINT`: the hub's base URL (default `https://huggingface.co`);
//! - `HF_HUB_OFFLINE`: `1`, `ON`, `YES` or `TRUE` (any case) forbids every request; a model
//!   must then be in the cache.
//!
//! Invariants: a file's URL is `{endpoint}/{model}/resolve/{revision}/{file}`, the revision's
//! `/` written `%2F` (as hf-hub writes it), the endpoint without a trailing `/`.

/// The hub when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// The variable that forbids downloads.
pub use crate::config::HUGGING_FACE_OFFLINE_VARIABLE as OFFLINE_VARIABLE;
/// The values of [`OFFLINE_VARIABLE`] that mean offline (compared in upper case), as the
/// Hugging Face libraries read booleans.
const TRUE_VALUES: [&str; 4] = ["1", "ON", "YES", "TRUE"];
/// The branch a model without a revision is fetched from.
pub const DEFAULT_REVISION: &str = "main";

/// The hub settings of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSettings {
    endpoint: String,
    offline: bool,
}

impl HubSettings {
    /// The settings the environment gives (read by the configuration).
    pub fn from_environment() -> Self {
        let (endpoint, offline) = crate::config::hugging_face_hub_variables();
        HubSettings::from_values(endpoint, offline)
    }

    /// The settings of these variable values (`None` when unset).
    pub fn from_values(endpoint: Option<String>, offline: Option<String>) -> Self {
        let endpoint = endpoint
            .map(|endpoint| endpoint.trim().trim_end_matches('/').to_owned())
            .filter(|endpoint| !endpoint.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let offline = offline
            .is_some_and(|value| TRUE_VALUES.contains(&value.trim().to_ascii_uppercase().as_str()));
        HubSettings { endpoint, offline }
    }

    /// Whether downloads are forbidden.
    pub fn offline(&self) -> bool {
        self.offline
    }

    /// The URL of `file` of `model` at `revision`.
    pub fn file_url(&self, model: &str, revision: &str, file: &str) -> String {
        let revision = revision.replace('/', "%2F");
        format!("{}/{model}/resolve/{revision}/{file}", self.endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_defaults_to_the_hub_and_loses_its_trailing_slash() {
        let settings = HubSettings::from_values(None, None);
        assert_eq!(
            settings.file_url("org/name", "main", "config.json"),
            "https://huggingface.co/org/name/resolve/main/config.json"
        );
        let settings = HubSettings::from_values(Some("http://127.0.0.1:9/".to_owned()), None);
        assert_eq!(
            settings.file_url("org/name", "refs/pr/1", "1_Pooling/config.json"),
            "http://127.0.0.1:9/org/name/resolve/refs%2Fpr%2F1/1_Pooling/config.json"
        );
    }

    #[test]
    fn offline_takes_the_libraries_true_values() {
        for value in ["1", "on", "Yes", "TRUE"] {
            assert!(HubSettings::from_values(None, Some(value.to_owned())).offline());
        }
        for value in ["0", "", "false", "no"] {
            assert!(!HubSettings::from_values(None, Some(value.to_owned())).offline());
        }
        assert!(!HubSettings::from_values(None, None).offline());
    }
}
