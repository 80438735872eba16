//! The client's side of a chat completion stream: server-sent events written into a bounded
//! queue the HTTP connection drains — `retry: 10000` first (as Meilisearch's event stream
//! starts), then one `data: <json>` event per chunk, and `data: [DONE]` at the end.
//!
//! Invariants: the queue holds at most [`EVENT_QUEUE_CAPACITY`] events (a slow client slows
//! the conversation down, it never grows memory); once the client is gone (the connection
//! dropped the receiving side) every send fails with [`ClientGone`], which ends the
//! conversation.

use futures_channel::mpsc;
use serde::Serialize;

/// Events waiting for the connection at most.
pub const EVENT_QUEUE_CAPACITY: usize = 10;

/// The reconnection delay the stream announces first, in milliseconds.
pub const RETRY_MILLISECONDS: u64 = 10_000;

/// The data of the last event.
pub const DONE_DATA: &str = "[DONE]";

/// The client left: nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientGone;

/// Sends events to the client.
pub struct EventSender {
    sender: mpsc::Sender<Vec<u8>>,
}

/// A new stream: its sender, and the bytes the connection writes (the retry announcement
/// already queued).
pub fn event_stream() -> (EventSender, mpsc::Receiver<Vec<u8>>) {
    let (mut sender, receiver) = mpsc::channel(EVENT_QUEUE_CAPACITY);
    // A new channel always has room for its first message.
    let _ = sender.try_send(format!("retry: {RETRY_MILLISECONDS}\n\n").into_bytes());
    (EventSender { sender }, receiver)
}

impl EventSender {
    /// Sends one event of `data` (one line), waiting for room.
    pub async fn send_data(&mut self, data: &str) -> Result<(), ClientGone> {
        let event = format!("data: {data}\n\n").into_bytes();
        futures_lite::future::poll_fn(|context| self.sender.poll_ready(context))
            .await
            .map_err(|_| ClientGone)?;
        self.sender.start_send(event).map_err(|_| ClientGone)
    }

    /// Sends `value` as one event of JSON.
    pub async fn send_json(&mut self, value: &impl Serialize) -> Result<(), ClientGone> {
        // The values sent are plain data: encoding them cannot fail.
        let text = serde_json::to_string(value).unwrap_or_default();
        self.send_data(&text).await
    }
}
