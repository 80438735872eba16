//! The body of `POST /chats/{workspace}/chat/completions`: an OpenAI chat completion request.
//!
//! It is checked as Meilisearch 1.41 checks it — with serde, against the OpenAI request's
//! shape (`messages` and `model` required, each message tagged by its `role` with its
//! required fields, the typed options typed) — so a bad body gets Meilisearch's
//! `Json deserialize error: …` message. What is sent to the model is the body's own JSON,
//! reduced to the fields of the OpenAI request (unknown fields and `null` values dropped, as
//! Meilisearch's re-encoding drops them).
//!
//! Invariant: a decoded request has `messages` as an array and `model` as a string.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::errors::ResponseError;

/// The fields of an OpenAI chat completion request, in the order they are sent.
pub const REQUEST_FIELDS: [&str; 30] = [
    "messages",
    "model",
    "store",
    "reasoning_effort",
    "metadata",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "max_tokens",
    "max_completion_tokens",
    "n",
    "modalities",
    "prediction",
    "audio",
    "presence_penalty",
    "response_format",
    "seed",
    "service_tier",
    "stop",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "user",
    "function_call",
    "functions",
];

/// A decoded chat completion request.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    pub model: String,
    /// `stream` (absent: false).
    pub stream: bool,
    /// `n`, the number of choices asked for.
    pub choices: Option<u8>,
    /// The names of the functions of `tools`, in order.
    pub tool_names: Vec<String>,
    /// The JSON sent to the model (the known fields, without `null`s).
    pub body: Map<String, Value>,
}

/// The shape the body is checked against (its names are the OpenAI request's, which serde's
/// messages show).
#[derive(Deserialize)]
#[allow(dead_code)] // Read for its checks only.
struct CreateChatCompletionRequest {
    messages: Vec<ChatCompletionRequestMessage>,
    model: String,
    store: Option<bool>,
    metadata: Option<Value>,
    frequency_penalty: Option<f32>,
    logit_bias: Option<std::collections::HashMap<String, Value>>,
    logprobs: Option<bool>,
    top_logprobs: Option<u8>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    n: Option<u8>,
    presence_penalty: Option<f32>,
    seed: Option<i64>,
    stream: Option<bool>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    tools: Option<Vec<ChatCompletionTool>>,
    parallel_tool_calls: Option<bool>,
    user: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
#[allow(dead_code)]
enum ChatCompletionRequestMessage {
    Developer(ChatCompletionRequestDeveloperMessage),
    System(ChatCompletionRequestSystemMessage),
    User(ChatCompletionRequestUserMessage),
    Assistant(ChatCompletionRequestAssistantMessage),
    Tool(ChatCompletionRequestToolMessage),
    Function(ChatCompletionRequestFunctionMessage),
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionRequestDeveloperMessage {
    content: ChatCompletionRequestDeveloperMessageContent,
    name: Option<String>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionRequestSystemMessage {
    content: ChatCompletionRequestSystemMessageContent,
    name: Option<String>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionRequestUserMessage {
    content: ChatCompletionRequestUserMessageContent,
    name: Option<String>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionRequestAssistantMessage {
    content: Option<ChatCompletionRequestAssistantMessageContent>,
    refusal: Option<String>,
    name: Option<String>,
    tool_calls: Option<Vec<ChatCompletionMessageToolCall>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionRequestToolMessage {
    content: ChatCompletionRequestToolMessageContent,
    tool_call_id: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionRequestFunctionMessage {
    content: Option<String>,
    name: String,
}

/// The content of a message: a text, or an array of parts.
macro_rules! message_content {
    ($($name:ident),*) => {$(
        #[derive(Deserialize)]
        #[serde(untagged)]
        #[allow(dead_code)]
        enum $name {
            Text(String),
            Array(Vec<Value>),
        }
    )*};
}

message_content!(
    ChatCompletionRequestDeveloperMessageContent,
    ChatCompletionRequestSystemMessageContent,
    ChatCompletionRequestUserMessageContent,
    ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestToolMessageContent
);

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionMessageToolCall {
    id: String,
    r#type: ChatCompletionToolType,
    function: FunctionCall,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct FunctionCall {
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ChatCompletionToolType {
    Function,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct ChatCompletionTool {
    r#type: ChatCompletionToolType,
    function: FunctionObject,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct FunctionObject {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
    strict: Option<bool>,
}

/// Decodes a body already read (its content type checked), with Meilisearch's errors.
pub fn decode(body: &[u8]) -> Result<CompletionRequest, ResponseError> {
    let checked: CreateChatCompletionRequest =
        serde_json::from_slice(body).map_err(crate::decode::json::json_syntax_error)?;
    let value: Map<String, Value> =
        serde_json::from_slice(body).map_err(crate::decode::json::json_syntax_error)?;
    let tool_names = checked
        .tools
        .iter()
        .flatten()
        .map(|tool| tool.function.name.clone())
        .collect();
    let body = REQUEST_FIELDS
        .iter()
        .filter_map(|name| match value.get(*name) {
            None | Some(Value::Null) => None,
            Some(field) => Some(((*name).to_owned(), field.clone())),
        })
        .collect();
    Ok(CompletionRequest {
        model: checked.model,
        stream: checked.stream.unwrap_or(false),
        choices: checked.n,
        tool_names,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> String {
        decode(body.as_bytes()).expect_err("refused").message
    }

    #[test]
    fn a_body_is_refused_with_serde_s_messages() {
        assert_eq!(
            refusal("{}"),
            "Json deserialize error: missing field `messages` at line 1 column 2"
        );
        assert_eq!(
            refusal(r#"{"messages":[]}"#),
            "Json deserialize error: missing field `model` at line 1 column 15"
        );
        assert!(
            refusal(r#"{"model":"m","messages":[{"role":"bogus"}]}"#)
                .contains("unknown variant `bogus`, expected one of `developer`, `system`, `user`, `assistant`, `tool`, `function`"),
        );
        assert!(
            refusal(r#"{"model":"m","messages":[{"role":"user"}]}"#)
                .contains("missing field `content`")
        );
        assert!(refusal(r#"{"model":"m","messages":[],"n":300}"#).contains("expected u8"));
    }

    #[test]
    fn the_forwarded_body_keeps_the_known_fields_in_order() {
        let request = decode(
            br#"{"stream":true,"unknown":1,"temperature":null,"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"_meiliSearchProgress"}}]}"#,
        )
        .expect("valid");
        assert!(request.stream);
        assert_eq!(request.tool_names, ["_meiliSearchProgress"]);
        let keys: Vec<&String> = request.body.keys().collect();
        assert_eq!(keys, ["messages", "model", "stream", "tools"]);
    }
}
