//! Charging an authorized request to its identity's token bucket on this core, and the 429
//! answer when the bucket is empty (the decisions are `crate::auth::rate_limit`'s).
//!
//! Invariants: only an authorized request reaches the charge (`Router::authorized_call`
//! calls it right after `authorize`, before any handler work); every refusal is counted in
//! this core's metrics, and every charge updates its count of buckets held.

use crate::auth::AuthContext;
use crate::auth::rate_limit::{RateLimitKind, RateLimiter};
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::metrics::rate_limits;

/// Charges `request`, authorized as `context`, to this core's `limiter`; the answer to send
/// instead of running the route when its identity is over its limit: 429
/// `too_many_requests` with `Retry-After`.
pub fn charge(
    limiter: &RateLimiter,
    request: &Request,
    context: &AuthContext,
) -> Result<(), Response> {
    let charged = limiter.charge(context, request.headers.get("authorization"));
    for kind in RateLimitKind::ALL {
        rate_limits::record_buckets_held(kind, limiter.buckets_held(kind));
    }
    charged.map_err(|refusal| {
        rate_limits::record_refusal(refusal.kind);
        Response::error(&ResponseError::from(&refusal))
            .with_header("retry-after", refusal.retry_after.get().to_string())
    })
}
