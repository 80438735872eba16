//! Conversational search (experimental feature `chatCompletions`), the use case behind
//! `POST /chats/{workspace}/chat/completions`: an OpenAI-compatible streamed chat completion
//! in which the workspace's LLM may search the indexes the caller can see.
//!
//! Layout: [`request`] (the body, checked as Meilisearch checks it), [`tools`] (the system
//! prompt and the `_meiliSearchInIndex` tool given to the model, the reporting functions
//! the client may declare), [`facet_summary`] (each index's filterable values for the
//! tool), [`provider`] (the HTTP request each source takes), [`conversation`] (the loop:
//! relay, gather tool calls, search, ask again), [`search_tool`] (one search, authorized as
//! the caller, rendered with the index's chat template), [`chunks`] and [`error_event`]
//! (what the client is streamed), [`event_sender`] (the server-sent events queue),
//! [`figures`] (the chat metrics), [`context`].
//!
//! Invariants: the model is called through the core's outgoing client (IP policy, TLS),
//! never blocking the core; every search the model asks for is authorized again with the
//! caller's own token, so a key or tenant token never reaches more through a chat than
//! through `/search`.

pub mod chunks;
pub mod context;
pub mod conversation;
pub mod error_event;
pub mod event_sender;
pub mod facet_summary;
pub mod figures;
pub mod provider;
pub mod request;
pub mod search_tool;
pub mod tools;

use serde_json::{Map, Value};

use context::ChatContext;
use conversation::Conversation;

/// Starts the conversation of `context` with the model request `body` (already set up by
/// [`tools::set_up_request`]) on this core; the bytes to stream to the client.
pub fn start(
    context: ChatContext,
    body: Map<String, Value>,
) -> futures_channel::mpsc::Receiver<Vec<u8>> {
    let (events, receiver) = event_sender::event_stream();
    crate::runtime::spawn_detached(Conversation::new(context, body, events).run());
    receiver
}
