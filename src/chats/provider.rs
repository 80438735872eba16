//! The HTTP request a chat completion sends to its workspace's LLM, with the URL and headers
//! Meilisearch 1.41 builds for each source:
//!
//! - `openAi`, `mistral`, `vLlm` (OpenAI-compatible): `<base>/chat/completions`, where the
//!   base is `baseUrl`, else the source's default (`https://api.openai.com/v1/`,
//!   `https://api.mistral.ai/v1/`; `vLlm` has none, its `baseUrl` is required) — joined as
//!   text, as Meilisearch joins it; headers `OpenAI-Organization` (`orgId`), `OpenAI-Project`
//!   (`projectId`), `Authorization: Bearer <apiKey>` and `OpenAI-Beta: assistants=v2`;
//! - `azureOpenAi`: `<baseUrl>/openai/deployments/<deploymentId>/chat/completions?api-version=
//!   <apiVersion>` with the `api-key` header;
//!
//! and `Content-Type: application/json`, `Accept: text/event-stream`.
//!
//! Invariant: a header value holding a control character (which would end the header on the
//! wire) is refused before anything is sent.

use crate::control::chat_workspaces::{ChatCompletionSettings, ChatCompletionSource};
use crate::outgoing::{Method, OutgoingRequest, SendOptions};

/// The path of the chat completion API under the base URL.
const COMPLETIONS_PATH: &str = "/chat/completions";

/// How long the LLM may take to send its response head.
pub const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Why no request could be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRefusal {
    pub url: String,
    pub reason: String,
}

/// The chat completion request for `settings`, carrying `body`; sent once (an LLM
/// conversation is not replayed on failure, as in Meilisearch).
pub fn completion_request(
    settings: &ChatCompletionSettings,
    body: Vec<u8>,
) -> Result<OutgoingRequest, RequestRefusal> {
    let (url, headers) = match settings.source {
        ChatCompletionSource::AzureOpenAi => azure(settings),
        _ => openai_compatible(settings),
    };
    let refusal = |reason: String| RequestRefusal {
        url: url.clone(),
        reason,
    };
    if let Some((name, _)) = headers
        .iter()
        .find(|(_, value)| value.chars().any(char::is_control))
    {
        return Err(refusal(format!("the `{name}` header value is invalid")));
    }
    let options = SendOptions {
        max_attempts: 1,
        request_timeout: HEAD_TIMEOUT,
        ..SendOptions::default()
    };
    let mut request = OutgoingRequest::new(Method::Post, &url)
        .map_err(|error| refusal(error.to_string()))?
        .options(options);
    for (name, value) in headers {
        request = request.header(name, &value);
    }
    Ok(request
        .header("Content-Type", "application/json")
        .header("Accept", "text/event-stream")
        .body(body))
}

/// The URL and headers of the OpenAI-compatible sources.
fn openai_compatible(settings: &ChatCompletionSettings) -> (String, Vec<(&'static str, String)>) {
    let base = settings
        .base_url
        .as_deref()
        .or(settings.source.default_base_url())
        .unwrap_or_default();
    let mut headers = Vec::new();
    if let Some(organization) = settings.org_id.as_deref().filter(|id| !id.is_empty()) {
        headers.push(("OpenAI-Organization", organization.to_owned()));
    }
    if let Some(project) = settings.project_id.as_deref().filter(|id| !id.is_empty()) {
        headers.push(("OpenAI-Project", project.to_owned()));
    }
    let key = settings.api_key.as_deref().unwrap_or_default();
    headers.push(("Authorization", format!("Bearer {key}")));
    headers.push(("OpenAI-Beta", "assistants=v2".to_owned()));
    (format!("{base}{COMPLETIONS_PATH}"), headers)
}

/// The URL and headers of Azure OpenAI.
fn azure(settings: &ChatCompletionSettings) -> (String, Vec<(&'static str, String)>) {
    let base = settings.base_url.as_deref().unwrap_or_default();
    let deployment = settings.deployment_id.as_deref().unwrap_or_default();
    let version = settings.api_version.as_deref().unwrap_or_default();
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("api-version", version)
        .finish();
    let url = format!("{base}/openai/deployments/{deployment}{COMPLETIONS_PATH}?{query}");
    let key = settings.api_key.clone().unwrap_or_default();
    (url, vec![("api-key", key)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: &str) -> ChatCompletionSettings {
        serde_json::from_str(json).expect("settings")
    }

    fn header<'a>(request: &'a OutgoingRequest, name: &str) -> Option<&'a str> {
        request
            .headers
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, value)| value.as_str())
    }

    #[test]
    fn each_source_gets_its_url_and_headers() {
        let openai = completion_request(
            &settings(r#"{"source":"openAi","apiKey":"k","orgId":"o","projectId":"p"}"#),
            Vec::new(),
        )
        .expect("valid");
        assert_eq!(
            openai.url.as_str(),
            "https://api.openai.com/v1//chat/completions"
        );
        assert_eq!(header(&openai, "Authorization"), Some("Bearer k"));
        assert_eq!(header(&openai, "OpenAI-Organization"), Some("o"));
        assert_eq!(header(&openai, "OpenAI-Project"), Some("p"));
        let mistral =
            completion_request(&settings(r#"{"source":"mistral"}"#), Vec::new()).expect("valid");
        assert_eq!(
            mistral.url.as_str(),
            "https://api.mistral.ai/v1//chat/completions"
        );
        assert_eq!(header(&mistral, "Authorization"), Some("Bearer "));
        let vllm = completion_request(
            &settings(r#"{"source":"vLlm","baseUrl":"http://llm:8000/v1"}"#),
            Vec::new(),
        )
        .expect("valid");
        assert_eq!(vllm.url.as_str(), "http://llm:8000/v1/chat/completions");
        let azure = completion_request(
            &settings(
                r#"{"source":"azureOpenAi","baseUrl":"https://a.example","deploymentId":"d","apiVersion":"2024-02-01","apiKey":"k"}"#,
            ),
            Vec::new(),
        )
        .expect("valid");
        assert_eq!(
            azure.url.as_str(),
            "https://a.example/openai/deployments/d/chat/completions?api-version=2024-02-01"
        );
        assert_eq!(header(&azure, "api-key"), Some("k"));
        assert_eq!(header(&azure, "Authorization"), None);
    }

    #[test]
    fn a_key_that_would_break_the_header_is_refused() {
        let refused = completion_request(
            &settings(r#"{"source":"openAi","apiKey":"k\r\nX-Evil: 1"}"#),
            Vec::new(),
        )
        .expect_err("refused");
        assert!(refused.reason.contains("Authorization"), "{refused:?}");
    }
}
