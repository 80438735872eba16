//! A span's identity as it travels: trace id, span id and the sampled flag, and its W3C
//! trace-context text (`traceparent`, version `00`).
//!
//! Invariants:
//! - a [`SpanContext`] never holds an all-zero trace id or span id (the W3C rules make such
//!   a header invalid, and [`SpanContext::new_root`] and [`SpanContext::new_child`] never
//!   draw zero);
//! - [`SpanContext::parse_traceparent`] accepts exactly version `00`'s form
//!   (`00-<32 hex>-<16 hex>-<2 hex>`, lowercase) and answers `None` for anything else, so
//!   an invalid header starts a new trace rather than failing the request;
//! - the context is `Copy` and small: carrying it between cores or into a request costs no
//!   allocation.

/// The header name of W3C trace context.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// The only version of `traceparent` this module writes and reads.
const TRACEPARENT_VERSION: &str = "00";
/// Hex digits of a trace id.
const TRACE_ID_HEX_DIGITS: usize = 32;
/// Hex digits of a span id.
const SPAN_ID_HEX_DIGITS: usize = 16;
/// Hex digits of the trace flags.
const FLAGS_HEX_DIGITS: usize = 2;
/// The bit of the trace flags saying the trace is recorded.
const SAMPLED_FLAG: u8 = 0x01;

/// A trace id: 16 bytes, never all zero.
pub type TraceId = [u8; 16];
/// A span id: 8 bytes, never all zero.
pub type SpanId = [u8; 8];

/// Where a span sits: its trace, its own id, and whether the trace is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub sampled: bool,
}

impl SpanContext {
    /// The first span of a new trace.
    pub fn new_root(sampled: bool) -> SpanContext {
        SpanContext {
            trace_id: nonzero_u128().to_be_bytes(),
            span_id: new_span_id(),
            sampled,
        }
    }

    /// A new span of this context's trace, with its sampled flag.
    pub fn new_child(&self) -> SpanContext {
        SpanContext {
            trace_id: self.trace_id,
            span_id: new_span_id(),
            sampled: self.sampled,
        }
    }

    /// The context a `traceparent` value names, or `None` when it is not a valid version
    /// `00` value.
    pub fn parse_traceparent(value: &[u8]) -> Option<SpanContext> {
        let text = std::str::from_utf8(value).ok()?.trim();
        let mut parts = text.split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || version != TRACEPARENT_VERSION {
            return None;
        }
        let trace_id: TraceId = lower_hex(trace, TRACE_ID_HEX_DIGITS)?;
        let span_id: SpanId = lower_hex(span, SPAN_ID_HEX_DIGITS)?;
        let [flags]: [u8; 1] = lower_hex(flags, FLAGS_HEX_DIGITS)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(SpanContext {
            trace_id,
            span_id,
            sampled: flags & SAMPLED_FLAG != 0,
        })
    }

    /// The `traceparent` value naming this context as the parent of the receiver's span.
    pub fn traceparent(&self) -> String {
        let flags = if self.sampled { SAMPLED_FLAG } else { 0 };
        format!(
            "{TRACEPARENT_VERSION}-{}-{}-{flags:02x}",
            hex::encode(self.trace_id),
            hex::encode(self.span_id)
        )
    }
}

/// `text` as `N` bytes when it is exactly `digits` lowercase hex digits.
fn lower_hex<const N: usize>(text: &str, digits: usize) -> Option<[u8; N]> {
    if text.len() != digits
        || !text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    {
        return None;
    }
    let mut bytes = [0u8; N];
    hex::decode_to_slice(text, &mut bytes).ok()?;
    Some(bytes)
}

/// A random span id, never zero.
fn new_span_id() -> SpanId {
    loop {
        let id = fastrand::u64(..);
        if id != 0 {
            return id.to_be_bytes();
        }
    }
}

/// A random 128-bit value, never zero.
fn nonzero_u128() -> u128 {
    loop {
        let id = fastrand::u128(..);
        if id != 0 {
            return id;
        }
    }
}
