//! The error events of a chat completion stream, as Meilisearch 1.41 sends them:
//! `{"event_id", "type": "error", "error": {"type", "code", "message", "param", "event_id"}}`
//! — for an error answer of the model (its own error object, OpenAI's or Mistral's shape),
//! for a model that cannot be reached or whose stream cannot be read, and for a search the
//! model asked for that failed.
//!
//! Invariant: every event has a fresh v4 `event_id`, and `error.event_id` is `null`.

use serde::{Deserialize, Serialize};

use crate::control::chat_workspaces::ChatCompletionSource;
use crate::errors::ResponseError;

/// What a model's error body that cannot be read is reported as (reqwest's wording, which
/// Meilisearch relays).
const UNREADABLE_ERROR_BODY: &str = "error decoding response body";

/// One error event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamErrorEvent {
    pub event_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub error: StreamError,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamError {
    #[serde(rename = "type")]
    pub kind: String,
    pub code: Option<String>,
    pub message: String,
    pub param: Option<String>,
    #[serde(default)]
    pub event_id: Option<String>,
}

/// OpenAI's error answer: `{"error": {...}}`.
#[derive(Deserialize)]
struct OpenAiErrorBody {
    error: OpenAiError,
}

#[derive(Deserialize)]
struct OpenAiError {
    code: Option<String>,
    message: String,
    param: Option<String>,
    #[serde(rename = "type")]
    kind: String,
}

/// Mistral's error answer: the fields at the top.
#[derive(Deserialize)]
struct MistralErrorBody {
    message: String,
    #[serde(rename = "type")]
    kind: String,
    param: Option<String>,
    code: Option<String>,
}

impl StreamErrorEvent {
    fn new(kind: &str, code: Option<String>, message: String) -> Self {
        StreamErrorEvent {
            event_id: uuid::Uuid::new_v4().to_string(),
            kind: "error".to_owned(),
            error: StreamError {
                kind: kind.to_owned(),
                code,
                message,
                param: None,
                event_id: None,
            },
        }
    }

    /// The model answered an error (or not an event stream): its error object when the body
    /// holds one in the source's shape, else that the body could not be read.
    pub fn from_error_body(source: ChatCompletionSource, body: &[u8]) -> Self {
        let parsed = match source {
            ChatCompletionSource::Mistral => serde_json::from_slice::<MistralErrorBody>(body)
                .ok()
                .map(|error| (error.kind, error.code, error.message, error.param)),
            _ => serde_json::from_slice::<OpenAiErrorBody>(body)
                .ok()
                .map(|body| {
                    let error = body.error;
                    (error.kind, error.code, error.message, error.param)
                }),
        };
        match parsed {
            Some((kind, code, message, param)) => {
                let mut event = StreamErrorEvent::new(&kind, code, message);
                event.error.param = param;
                event
            }
            None => StreamErrorEvent::new("reqwest_error", None, UNREADABLE_ERROR_BODY.to_owned()),
        }
    }

    /// The model could not be reached or its stream broke off.
    pub fn transport(message: String) -> Self {
        StreamErrorEvent::new("transport_error", None, message)
    }

    /// A chunk of the model's stream is not a chat completion chunk.
    pub fn json_deserialize(message: String) -> Self {
        StreamErrorEvent::new(
            "json_deserialize_error",
            Some("internal".to_owned()),
            message,
        )
    }

    /// The model's stream is not a readable event stream.
    pub fn parser(message: String) -> Self {
        StreamErrorEvent::new("parser_error", None, message)
    }

    /// A search the model asked for failed with `error` (its `code` is the HTTP status the
    /// error answers with, as Meilisearch writes it).
    pub fn response_error(error: &ResponseError) -> Self {
        StreamErrorEvent::new(
            "response_error",
            Some(error.status().to_string()),
            error.message.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_openai_or_mistral_error_body_is_relayed_as_an_event() {
        let event = StreamErrorEvent::from_error_body(
            ChatCompletionSource::OpenAi,
            br#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        );
        let json = serde_json::to_value(&event).expect("json");
        assert_eq!(json["type"], "error");
        assert_eq!(
            json["error"],
            serde_json::json!({"type": "invalid_request_error", "code": "invalid_api_key", "message": "Incorrect API key", "param": null, "event_id": null})
        );
        let mistral = StreamErrorEvent::from_error_body(
            ChatCompletionSource::Mistral,
            br#"{"object":"error","message":"capacity","type":"invalid_request_error","param":null,"code":null}"#,
        );
        assert_eq!(mistral.error.message, "capacity");
        let unreadable = StreamErrorEvent::from_error_body(ChatCompletionSource::VLlm, b"<html>");
        assert_eq!(unreadable.error.kind, "reqwest_error");
    }
}
