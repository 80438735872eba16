//! What a chat completion runs with: the core's coordinator, search queue, control state and
//! outgoing client, the caller's `Authorization` header (every search the model asks for is
//! authorized again with it, as a `search`), and the workspace it talks through.
//!
//! Invariant: a context lives on the core that received the request; the conversation it
//! drives runs there, as a local task.

use std::rc::Rc;

use crate::control::ControlPlane;
use crate::control::chat_workspaces::ChatCompletionSettings;
use crate::coordinator::Coordinator;
use crate::outgoing::OutgoingClient;
use crate::search::queue::SearchQueue;

/// Which of Meilisearch's reporting functions the client declared in `tools`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FunctionSupport {
    /// `_meiliSearchProgress`: each search is announced.
    pub report_progress: bool,
    /// `_meiliSearchSources`: each search's documents are sent.
    pub report_sources: bool,
    /// `_meiliAppendConversationMessage`: the messages to keep in the conversation are sent.
    pub append_to_conversation: bool,
}

/// Everything a conversation needs.
pub struct ChatContext {
    pub coordinator: Rc<Coordinator>,
    pub search_queue: Rc<SearchQueue>,
    pub control: Rc<ControlPlane>,
    pub client: Rc<OutgoingClient>,
    /// The raw `Authorization` header of the request, if any.
    pub authorization: Option<Vec<u8>>,
    pub workspace: String,
    pub settings: ChatCompletionSettings,
    /// The `model` of the request.
    pub model: String,
    pub functions: FunctionSupport,
}
