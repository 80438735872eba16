//! The chunks of a streamed chat completion, in the OpenAI format: what the model streams
//! (read from each `data:` event) and what the client is streamed — the model's chunks
//! relayed, and the chunks through which Meilisearch 1.41 reports its own work as calls of
//! the client's declared functions (`_meiliSearchProgress`, `_meiliSearchSources`,
//! `_meiliAppendConversationMessage`).
//!
//! Invariants: a relayed chunk is written with every field of the OpenAI chunk in its
//! order, `null` when absent (as Meilisearch re-encodes it); a reporting chunk is the
//! model's chunk of the moment with its first choice replaced by one assistant delta
//! holding one call of the reporting function, under a fresh id.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The name of the search tool given to the model; its calls are answered here and never
/// reach the client.
pub const SEARCH_IN_INDEX_FUNCTION: &str = "_meiliSearchInIndex";
/// The client's function that hears what is being searched.
pub const SEARCH_PROGRESS_FUNCTION: &str = "_meiliSearchProgress";
/// The client's function that gets the documents a search found.
pub const SEARCH_SOURCES_FUNCTION: &str = "_meiliSearchSources";
/// The client's function asked to keep the search calls and results in the conversation.
pub const APPEND_CONVERSATION_MESSAGE_FUNCTION: &str = "_meiliAppendConversationMessage";

/// One streamed chunk of a chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamChunk {
    pub id: String,
    pub choices: Vec<StreamChoice>,
    pub created: u32,
    pub model: String,
    pub service_tier: Option<String>,
    pub system_fingerprint: Option<String>,
    pub object: String,
    pub usage: Option<CompletionUsage>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamChoice {
    pub index: u32,
    pub delta: StreamDelta,
    pub finish_reason: Option<String>,
    pub logprobs: Option<Value>,
}

/// What a choice adds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamDelta {
    pub content: Option<String>,
    pub function_call: Option<FunctionCallStream>,
    pub tool_calls: Option<Vec<ToolCallChunk>>,
    pub role: Option<Role>,
    pub refusal: Option<String>,
}

/// The author of a delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
    Function,
}

/// A piece of one tool call: the first piece names it, later ones add to its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallChunk {
    pub index: u32,
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<ToolKind>,
    pub function: Option<FunctionCallStream>,
}

/// The kind of a tool (only functions exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Function,
}

/// A function call's name and (a piece of) its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCallStream {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

/// The tokens a completion used (the last chunk carries them when asked for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionUsage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    pub prompt_tokens_details: Option<Value>,
    pub completion_tokens_details: Option<Value>,
}

/// The finish reason of a turn that asks for tool calls.
pub const TOOL_CALLS_FINISH_REASON: &str = "tool_calls";

/// A complete tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    /// The call as a message's `tool_calls` entry.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        })
    }
}

/// The assistant message holding `calls`, as the conversation records it.
pub fn assistant_message(calls: &[ToolCall]) -> Value {
    let calls: Vec<Value> = calls.iter().map(ToolCall::to_json).collect();
    json!({"role": "assistant", "tool_calls": calls})
}

/// The tool message answering call `call_id` with `content`.
pub fn tool_message(call_id: &str, content: &str) -> Value {
    json!({"role": "tool", "content": content, "tool_call_id": call_id})
}

/// `base` with its first choice replaced by an assistant delta calling `function` with
/// `arguments` (a fresh call id).
pub fn reporting_chunk(base: &StreamChunk, function: &str, arguments: String) -> StreamChunk {
    let call = ToolCallChunk {
        index: 0,
        id: Some(uuid::Uuid::new_v4().to_string()),
        kind: Some(ToolKind::Function),
        function: Some(FunctionCallStream {
            name: Some(function.to_owned()),
            arguments: Some(arguments),
        }),
    };
    let choice = StreamChoice {
        index: 0,
        delta: StreamDelta {
            tool_calls: Some(vec![call]),
            role: Some(Role::Assistant),
            ..StreamDelta::default()
        },
        finish_reason: None,
        logprobs: None,
    };
    let mut chunk = base.clone();
    match chunk.choices.first_mut() {
        Some(first) => *first = choice,
        None => chunk.choices.push(choice),
    }
    chunk
}

/// `_meiliSearchProgress`'s arguments: the search call being run.
pub fn progress_arguments(call: &ToolCall) -> String {
    json!({
        "call_id": call.id,
        "function_name": call.name,
        "function_arguments": call.arguments,
    })
    .to_string()
}

/// `_meiliSearchSources`'s arguments: the documents search `call_id` found.
pub fn sources_arguments(call_id: &str, sources: &[Value]) -> String {
    json!({"call_id": call_id, "sources": sources}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_chunk_names_every_field_in_openai_s_order() {
        let chunk: StreamChunk = serde_json::from_str(
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","extra":1,
                "choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        )
        .expect("a chunk");
        assert_eq!(
            serde_json::to_string(&chunk).expect("json"),
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hi","function_call":null,"tool_calls":null,"role":null,"refusal":null},"finish_reason":null,"logprobs":null}],"created":1,"model":"m","service_tier":null,"system_fingerprint":null,"object":"chat.completion.chunk","usage":null}"#
        );
    }

    #[test]
    fn a_reporting_chunk_calls_the_client_function_once() {
        let base: StreamChunk = serde_json::from_str(
            r#"{"id":"c","object":"o","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        )
        .expect("a chunk");
        let call = ToolCall {
            id: "call_1".to_owned(),
            name: SEARCH_IN_INDEX_FUNCTION.to_owned(),
            arguments: "{}".to_owned(),
        };
        let chunk = reporting_chunk(&base, SEARCH_PROGRESS_FUNCTION, progress_arguments(&call));
        let choice = &chunk.choices[0];
        assert_eq!(choice.finish_reason, None);
        assert_eq!(choice.delta.role, Some(Role::Assistant));
        let calls = choice.delta.tool_calls.as_ref().expect("a call");
        let function = calls[0].function.as_ref().expect("a function");
        assert_eq!(function.name.as_deref(), Some(SEARCH_PROGRESS_FUNCTION));
        assert_eq!(
            function.arguments.as_deref(),
            Some(
                r#"{"call_id":"call_1","function_name":"_meiliSearchInIndex","function_arguments":"{}"}"#
            )
        );
    }
}
