//! The loop of a streamed chat completion, as Meilisearch 1.41 runs it: send the
//! conversation to the model, relay what it streams, and when it asks for
//! `_meiliSearchInIndex` calls instead of answering, run each search, add the calls and
//! their results to the conversation and ask again — until the model finishes without a
//! tool call, at most [`CONVERSATION_TURNS_MAX`] times — then end the stream with `[DONE]`.
//!
//! In a turn: a chunk carrying tool call pieces is gathered, not relayed (the first piece
//! of a call names it, later pieces add to its arguments); the first chunk without tool
//! calls after them has the gathered calls answered (their progress, sources and
//! conversation messages reported through it, see [`super::chunks`]); every other chunk is
//! relayed; a chunk without choices (the usage chunk) ends the reading. Calls still
//! gathered when the stream ends are answered with its last chunk. Calls of functions other
//! than the search tool are dropped.
//!
//! An error answer of the model, a model that cannot be reached, and a stream that cannot be
//! read end the conversation with an error event ([`super::error_event`]) before `[DONE]`.
//!
//! Invariant: the conversation runs on the core that received the request, as a local task,
//! and stops at the first event the client can no longer receive.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::chunks::{
    APPEND_CONVERSATION_MESSAGE_FUNCTION, SEARCH_IN_INDEX_FUNCTION, SEARCH_PROGRESS_FUNCTION,
    SEARCH_SOURCES_FUNCTION, StreamChunk, TOOL_CALLS_FINISH_REASON, ToolCall, ToolCallChunk,
    assistant_message, progress_arguments, reporting_chunk, sources_arguments, tool_message,
};
use super::context::ChatContext;
use super::error_event::StreamErrorEvent;
use super::event_sender::{ClientGone, DONE_DATA, EventSender};
use super::figures::{TokenCounts, record_usage};
use crate::outgoing::StreamedResponse;
use crate::outgoing::event_stream::EventStreamParser;

/// The most times the model is asked within one completion.
pub const CONVERSATION_TURNS_MAX: usize = 20;

/// How long the model's stream may stay silent.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The media type of an event stream.
const EVENT_STREAM_MEDIA_TYPE: &str = "text/event-stream";

/// A tool call being gathered.
enum PendingCall {
    /// A call of the search tool.
    Search(ToolCall),
    /// A call of a function that is not Meilisearch's (dropped).
    Other,
}

/// How a turn ended.
enum TurnEnd {
    /// The model asked for tool calls: ask it again.
    Again,
    Finished,
}

/// What the reading of a turn does after a chunk.
enum ChunkFlow {
    Continue,
    StopReading,
}

/// One streamed chat completion.
pub struct Conversation {
    context: ChatContext,
    /// The request sent to the model; its `messages` grow with every search.
    body: Map<String, Value>,
    events: EventSender,
    /// Tool calls being gathered, by their index in the model's answer.
    pending: BTreeMap<u32, PendingCall>,
}

impl Conversation {
    pub fn new(context: ChatContext, body: Map<String, Value>, events: EventSender) -> Self {
        Conversation {
            context,
            body,
            events,
            pending: BTreeMap::new(),
        }
    }

    /// Runs the conversation to its end.
    pub async fn run(mut self) {
        for _ in 0..CONVERSATION_TURNS_MAX {
            match self.turn().await {
                Ok(TurnEnd::Again) => {}
                Ok(TurnEnd::Finished) => break,
                Err(ClientGone) => return,
            }
        }
        let _ = self.events.send_data(DONE_DATA).await;
    }

    /// Asks the model once and relays its answer.
    async fn turn(&mut self) -> Result<TurnEnd, ClientGone> {
        let settings = &self.context.settings;
        if settings.source.reports_usage() {
            self.body
                .insert("stream_options".to_owned(), json!({"include_usage": true}));
        } else {
            self.body.remove("stream_options");
        }
        let body = serde_json::to_vec(&self.body).unwrap_or_default();
        let request = match super::provider::completion_request(settings, body) {
            Ok(request) => request,
            Err(refusal) => {
                let message = format!(
                    "builder error for url ({}): {}",
                    refusal.url, refusal.reason
                );
                return self.fail(StreamErrorEvent::transport(message)).await;
            }
        };
        let url = request.url.to_string();
        let sent = self
            .context
            .client
            .send_streamed(request, STREAM_IDLE_TIMEOUT)
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(error) => {
                tracing::warn!(%url, %error, "a chat completion could not reach its model");
                let message = format!("error sending request for url ({url})");
                return self.fail(StreamErrorEvent::transport(message)).await;
            }
        };
        if !is_event_stream(&response) {
            let body = response.remaining_body().await.unwrap_or_default();
            let source = self.context.settings.source;
            return self
                .fail(StreamErrorEvent::from_error_body(source, &body))
                .await;
        }
        self.read_stream(&mut response).await
    }

    /// Sends `event` and ends the conversation.
    async fn fail(&mut self, event: StreamErrorEvent) -> Result<TurnEnd, ClientGone> {
        self.events.send_json(&event).await?;
        Ok(TurnEnd::Finished)
    }

    /// Reads the model's stream to its end (or its `[DONE]`, or a chunk without choices).
    async fn read_stream(
        &mut self,
        response: &mut StreamedResponse,
    ) -> Result<TurnEnd, ClientGone> {
        let mut parser = EventStreamParser::new();
        let mut finish_reason = None;
        let mut last_chunk = None;
        'reading: loop {
            let piece = match response.next_piece().await {
                Ok(Some(piece)) => piece,
                Ok(None) => break,
                Err(error) => {
                    tracing::warn!(%error, "a chat completion's model stream broke off");
                    let event =
                        StreamErrorEvent::transport("error decoding response body".to_owned());
                    return self.fail(event).await;
                }
            };
            let events = match parser.feed(&piece) {
                Ok(events) => events,
                Err(error) => return self.fail(StreamErrorEvent::parser(error.to_string())).await,
            };
            for event in events {
                if event.data == DONE_DATA {
                    break 'reading;
                }
                let chunk: StreamChunk = match serde_json::from_str(&event.data) {
                    Ok(chunk) => chunk,
                    Err(error) => {
                        let event = StreamErrorEvent::json_deserialize(error.to_string());
                        return self.fail(event).await;
                    }
                };
                let flow = self.on_chunk(&chunk, &mut finish_reason).await?;
                last_chunk = Some(chunk);
                if let ChunkFlow::StopReading = flow {
                    break 'reading;
                }
            }
        }
        if let Some(chunk) = last_chunk.filter(|_| !self.pending.is_empty()) {
            self.answer_pending(&chunk).await?;
        }
        match finish_reason.as_deref() {
            Some(TOOL_CALLS_FINISH_REASON) => Ok(TurnEnd::Again),
            _ => Ok(TurnEnd::Finished),
        }
    }

    /// Handles one chunk of the model's stream.
    async fn on_chunk(
        &mut self,
        chunk: &StreamChunk,
        finish_reason: &mut Option<String>,
    ) -> Result<ChunkFlow, ClientGone> {
        if let Some(usage) = &chunk.usage {
            let counts = TokenCounts {
                prompt: u64::from(usage.prompt_tokens),
                completion: u64::from(usage.completion_tokens),
                total: u64::from(usage.total_tokens),
            };
            record_usage(&self.context.workspace, &self.context.model, counts);
        }
        let Some(choice) = chunk.choices.first() else {
            return Ok(ChunkFlow::StopReading);
        };
        finish_reason.clone_from(&choice.finish_reason);
        match &choice.delta.tool_calls {
            Some(calls) => calls.iter().for_each(|call| self.gather(call)),
            None if !self.pending.is_empty() => self.answer_pending(chunk).await?,
            None => self.events.send_json(chunk).await?,
        }
        Ok(ChunkFlow::Continue)
    }

    /// Adds a piece of a tool call to the calls being gathered.
    fn gather(&mut self, piece: &ToolCallChunk) {
        let function = piece.function.as_ref();
        let arguments = function
            .and_then(|function| function.arguments.as_deref())
            .unwrap_or_default();
        match self.pending.get_mut(&piece.index) {
            Some(PendingCall::Search(call)) => call.arguments.push_str(arguments),
            Some(PendingCall::Other) => {}
            None => {
                let name = function.and_then(|function| function.name.as_deref());
                let call = match name {
                    Some(SEARCH_IN_INDEX_FUNCTION) => PendingCall::Search(ToolCall {
                        id: piece.id.clone().unwrap_or_default(),
                        name: SEARCH_IN_INDEX_FUNCTION.to_owned(),
                        arguments: arguments.to_owned(),
                    }),
                    _ => PendingCall::Other,
                };
                self.pending.insert(piece.index, call);
            }
        }
    }

    /// Answers the gathered search calls, reporting through `base`.
    async fn answer_pending(&mut self, base: &StreamChunk) -> Result<(), ClientGone> {
        let calls: Vec<ToolCall> = std::mem::take(&mut self.pending)
            .into_values()
            .filter_map(|call| match call {
                PendingCall::Search(call) => Some(call),
                PendingCall::Other => None,
            })
            .collect();
        if calls.is_empty() {
            return Ok(());
        }
        self.push_message(assistant_message(&calls));
        for call in &calls {
            self.answer_call(base, call).await?;
        }
        Ok(())
    }

    /// Runs one search call, reports it as the client asked, and adds its result.
    async fn answer_call(&mut self, base: &StreamChunk, call: &ToolCall) -> Result<(), ClientGone> {
        let functions = self.context.functions;
        if functions.report_progress {
            let chunk = reporting_chunk(base, SEARCH_PROGRESS_FUNCTION, progress_arguments(call));
            self.events.send_json(&chunk).await?;
        }
        if functions.append_to_conversation {
            let message = assistant_message(std::slice::from_ref(call)).to_string();
            let chunk = reporting_chunk(base, APPEND_CONVERSATION_MESSAGE_FUNCTION, message);
            self.events.send_json(&chunk).await?;
        }
        let outcome = super::search_tool::answer_call(&self.context, &call.arguments).await;
        if let (true, Some(sources)) = (functions.report_sources, &outcome.sources) {
            let arguments = sources_arguments(&call.id, sources);
            let chunk = reporting_chunk(base, SEARCH_SOURCES_FUNCTION, arguments);
            self.events.send_json(&chunk).await?;
        }
        let tool = tool_message(&call.id, &outcome.answer);
        if functions.append_to_conversation {
            let chunk =
                reporting_chunk(base, APPEND_CONVERSATION_MESSAGE_FUNCTION, tool.to_string());
            self.events.send_json(&chunk).await?;
        }
        self.push_message(tool);
        if let Some(error) = &outcome.error {
            self.events
                .send_json(&StreamErrorEvent::response_error(error))
                .await?;
        }
        Ok(())
    }

    /// Adds `message` to the conversation sent to the model.
    fn push_message(&mut self, message: Value) {
        if let Some(Value::Array(messages)) = self.body.get_mut("messages") {
            messages.push(message);
        }
    }
}

/// Whether the model answered an event stream (a 2xx of type `text/event-stream`).
fn is_event_stream(response: &StreamedResponse) -> bool {
    let media_type = response
        .header("content-type")
        .and_then(|value| value.parse::<mime::Mime>().ok());
    (200..300).contains(&response.status)
        && media_type.is_some_and(|media| media.essence_str() == EVENT_STREAM_MEDIA_TYPE)
}
