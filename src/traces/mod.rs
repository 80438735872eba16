//! Distributed traces: OpenTelemetry spans exported over OTLP/HTTP as JSON, off unless
//! `--experimental-otlp-traces-endpoint` is given.
//!
//! What is traced, and where the span starts and ends:
//! - every HTTP request: a server span in `routes::Router::handle`, the child of a valid
//!   incoming `traceparent`, named by its route's pattern;
//! - every shard command: an internal span on the shard's core around the command
//!   (`coordinator`); the parent's context crosses cores inside the mesh invocation
//!   (`runtime::invoke::Invocation`);
//! - every call to a remote (`network::remote_call`, `network::forward`) and to an embedder
//!   (`embedders::embedder`): a client span, whose context the outgoing client sends as
//!   `traceparent` (`outgoing`); a local `huggingFace` model's batch runs in an internal
//!   span of its own;
//! - every task batch: a root span on the control core (`tasks::scheduler`); the batch's
//!   webhook deliveries carry its `traceparent`.
//!
//! This module sits at the bottom of the layers (ARCHITECTURE.md §1.3): it imports nothing
//! of the crate, so the runtime, the outgoing client and every use case may use it.
//!
//! Invariants:
//! - with tracing off, starting a span is one branch and allocates nothing;
//! - no core ever waits on export ([`exporter`]): spans leave through a bounded channel and
//!   a full channel drops them;
//! - an unreachable endpoint is logged (rate-limited) and never fatal;
//! - the current context is per poll, never per thread ([`current`]).

pub mod context;
pub mod current;
pub mod encode;
pub mod exporter;
pub mod post;
pub mod span;

#[cfg(test)]
mod tests;

pub use context::{SpanContext, TRACEPARENT_HEADER};
pub use current::{current, within};
pub use exporter::{ExportSettings, enabled, flush, install};
pub use span::{Span, SpanKind, client_call};

/// The `traceparent` value naming the current span as the parent, when there is one.
pub fn current_traceparent() -> Option<String> {
    current().map(|context| context.traceparent())
}
