//! The `profile` mode of `/logs/stream`: instead of formatted lines, a sequence of JSON
//! entries describing spans and events with their timing, in the format of Meilisearch's
//! `tracing-trace` crate, so its `trace-to-firefox` tool turns a capture into a Firefox
//! Profiler file. Entries follow each other without separator:
//! `{"NewCallsite":{...}}{"NewThread":{...}}{"NewSpan":{...}}{"SpanEnter":{...}}...`.
//!
//! Invariants: a callsite and a thread are announced (`NewCallsite`, `NewThread`) before the
//! first entry that names them in a capture; a callsite's id is the address of its static
//! metadata, a thread's id is a number given once per thread for the life of the process;
//! times are measured from the capture's start; `memory` is only filled under
//! `profileMemory` (the resident set size, read from `/proc/self/statm`).

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tracing::span::{Attributes, Id};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

use super::stream::StreamSender;

/// The next thread number to give.
static NEXT_THREAD_NUMBER: AtomicUsize = AtomicUsize::new(0);
/// The next capture number: each capture announces its callsites and threads anew.
static NEXT_CAPTURE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's number, given at its first entry.
    static THREAD_NUMBER: usize = NEXT_THREAD_NUMBER.fetch_add(1, Ordering::Relaxed);
    /// The capture this thread announced itself and its callsites in, and those callsites.
    static ANNOUNCED: RefCell<(u64, HashSet<usize>)> = RefCell::new((0, HashSet::new()));
}

/// One entry of a capture (the wire names of `tracing-trace`'s `Entry`).
#[derive(Debug, Serialize)]
enum Entry<'a> {
    NewCallsite(NewCallsite<'a>),
    NewThread(NewThread),
    NewSpan(NewSpan),
    SpanEnter(SpanTime),
    SpanExit(SpanTime),
    SpanClose(SpanClose),
    Event(EventEntry),
}

#[derive(Debug, Serialize)]
struct NewCallsite<'a> {
    call_id: usize,
    name: &'a str,
    module_path: Option<&'a str>,
    file: Option<&'a str>,
    line: Option<u32>,
    target: &'a str,
}

#[derive(Debug, Serialize)]
struct NewThread {
    thread_id: usize,
    name: Option<String>,
}

#[derive(Debug, Serialize)]
struct NewSpan {
    id: u64,
    call_id: usize,
    parent_id: Option<u64>,
    thread_id: usize,
}

#[derive(Debug, Serialize)]
struct SpanTime {
    id: u64,
    time: Duration,
    memory: Option<MemoryStats>,
}

#[derive(Debug, Serialize)]
struct SpanClose {
    id: u64,
    time: Duration,
}

#[derive(Debug, Serialize)]
struct EventEntry {
    call_id: usize,
    thread_id: usize,
    parent_id: Option<u64>,
    time: Duration,
    memory: Option<MemoryStats>,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct MemoryStats {
    /// Resident set size in bytes.
    resident: u64,
}

/// The layer of one profile capture.
pub struct ProfileLayer {
    sender: Arc<StreamSender>,
    started: Instant,
    capture: u64,
    profile_memory: bool,
}

impl ProfileLayer {
    pub fn new(sender: Arc<StreamSender>, profile_memory: bool) -> ProfileLayer {
        ProfileLayer {
            sender,
            started: Instant::now(),
            capture: NEXT_CAPTURE.fetch_add(1, Ordering::Relaxed),
            profile_memory,
        }
    }

    fn send(&self, entry: &Entry<'_>) {
        match serde_json::to_vec(entry) {
            Ok(bytes) => self.sender.send(bytes),
            // Plain structs of numbers and strings always serialize.
            Err(_) => debug_assert!(false, "a profile entry serializes"),
        }
    }

    fn memory(&self) -> Option<MemoryStats> {
        self.profile_memory
            .then(resident_bytes)
            .flatten()
            .map(|resident| MemoryStats { resident })
    }

    /// This thread's id and the id of `metadata`'s callsite, announcing either first when
    /// this capture has not seen it on this thread.
    fn announce(&self, metadata: &'static Metadata<'static>) -> (usize, usize) {
        let thread_id = THREAD_NUMBER.with(|number| *number);
        let call_id = std::ptr::from_ref(metadata) as usize;
        let (new_thread, new_callsite) = ANNOUNCED.with(|announced| {
            let mut announced = announced.borrow_mut();
            let new_thread = announced.0 != self.capture;
            if new_thread {
                *announced = (self.capture, HashSet::new());
            }
            (new_thread, announced.1.insert(call_id))
        });
        if new_thread {
            let name = std::thread::current().name().map(str::to_owned);
            self.send(&Entry::NewThread(NewThread { thread_id, name }));
        }
        if new_callsite {
            self.send(&Entry::NewCallsite(NewCallsite {
                call_id,
                name: metadata.name(),
                module_path: metadata.module_path(),
                file: metadata.file(),
                line: metadata.line(),
                target: metadata.target(),
            }));
        }
        (thread_id, call_id)
    }
}

impl<S: Subscriber> Layer<S> for ProfileLayer {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        let (thread_id, call_id) = self.announce(attributes.metadata());
        let parent_id = match attributes.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if attributes.is_contextual() => {
                context.current_span().id().map(tracing::span::Id::into_u64)
            }
            None => None,
        };
        self.send(&Entry::NewSpan(NewSpan {
            id: id.into_u64(),
            call_id,
            parent_id,
            thread_id,
        }));
    }

    fn on_enter(&self, id: &Id, _context: Context<'_, S>) {
        self.send(&Entry::SpanEnter(SpanTime {
            id: id.into_u64(),
            time: self.started.elapsed(),
            memory: self.memory(),
        }));
    }

    fn on_exit(&self, id: &Id, _context: Context<'_, S>) {
        self.send(&Entry::SpanExit(SpanTime {
            id: id.into_u64(),
            time: self.started.elapsed(),
            memory: self.memory(),
        }));
    }

    fn on_event(&self, event: &Event<'_>, context: Context<'_, S>) {
        let (thread_id, call_id) = self.announce(event.metadata());
        let parent_id = match event.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if event.is_contextual() => {
                context.current_span().id().map(tracing::span::Id::into_u64)
            }
            None => None,
        };
        self.send(&Entry::Event(EventEntry {
            call_id,
            thread_id,
            parent_id,
            time: self.started.elapsed(),
            memory: self.memory(),
        }));
    }

    fn on_close(&self, id: Id, _context: Context<'_, S>) {
        self.send(&Entry::SpanClose(SpanClose {
            id: id.into_u64(),
            time: self.started.elapsed(),
        }));
    }
}

/// The process's resident set size, from `/proc/self/statm` (pages × page size).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a configuration value and has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(u64::try_from(page_size).ok()?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_lite::StreamExt;
    use futures_lite::future::{block_on, poll_once};
    use serde_json::Value;
    use tracing_subscriber::layer::SubscriberExt;

    use super::super::stream::channel;
    use super::*;

    /// The entries a capture sent, parsed one by one.
    fn entries(receiver: &mut super::super::stream::StreamReceiver) -> Vec<Value> {
        let mut entries = Vec::new();
        while let Some(Some(bytes)) = block_on(poll_once(receiver.next())) {
            entries.push(serde_json::from_slice(&bytes).unwrap());
        }
        entries
    }

    #[test]
    fn a_capture_announces_threads_and_callsites_before_naming_them() {
        let (sender, mut receiver) = channel();
        let subscriber =
            tracing_subscriber::registry().with(ProfileLayer::new(sender.clone(), true));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("indexing");
            let _entered = span.enter();
            for _ in 0..2 {
                tracing::info!("inside");
            }
        });
        let entries = entries(&mut receiver);
        let kinds: Vec<&str> = entries
            .iter()
            .map(|entry| entry.as_object().unwrap().keys().next().unwrap().as_str())
            .collect();
        assert_eq!(
            kinds,
            [
                "NewThread",
                "NewCallsite",
                "NewSpan",
                "SpanEnter",
                "NewCallsite",
                "Event",
                "Event",
                "SpanExit",
                "SpanClose"
            ]
        );
        let span_id = &entries[2]["NewSpan"]["id"];
        assert_eq!(entries[5]["Event"]["parent_id"], *span_id);
        assert_eq!(entries[1]["NewCallsite"]["name"], "indexing");
        assert!(entries[3]["SpanEnter"]["time"]["nanos"].is_u64());
        assert!(
            entries[3]["SpanEnter"]["memory"]["resident"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
}
