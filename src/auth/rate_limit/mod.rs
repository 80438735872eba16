//! Rate limits per API key and per tenant token: token buckets, one per identity per core,
//! counted on the core that answers.
//!
//! The decisions, and where each is made:
//! - **Who is charged** ([`limiter`]): a request authenticated with an API key is charged to
//!   the key's uid; one authenticated with a tenant token to that token (a keyed digest of
//!   its text, [`identity`]), under the tenant-token limit, and not to its parent key. The
//!   master key is exempt, and so is every request of an instance without a master key:
//!   there is no identity to charge (per-address limits belong to a proxy in front).
//!   Routes without actions (`/health`, `/version`) and refused requests are not charged:
//!   the charge comes after authentication succeeded and before the handler runs
//!   (`crate::routes`, right after `authorize`).
//! - **A core's share** ([`limiter::core_shape`]): connections are spread over the cores,
//!   and each core keeps its own buckets with no lock shared between cores. The configured
//!   figures are the instance's: on `N` cores, each core refills at `rate / N` per second
//!   and holds `ceil(burst / N)` tokens. An identity whose connections are spread over every
//!   core (the cores even out connection counts) gets the configured rate, up to the burst's
//!   rounding; one whose requests all reach one core (a single keep-alive connection) gets
//!   `1 / N` of it. To give each connection the whole figure, configure it times `N`.
//! - **The buckets** ([`bucket`]): each is one instant, the moment it is full again (the
//!   token bucket as the generic cell rate algorithm), so a refill costs nothing and a full
//!   bucket is indistinguishable from a forgotten one.
//! - **Memory** ([`buckets`]): a core holds at most [`buckets::BUCKETS_PER_CORE_MAX`]
//!   buckets per kind; full ones are forgotten first, and past that the ones closest to full.
//! - **The answer** ([`refusal`]): 429 `too_many_requests`, type `invalid_request`
//!   (coresearch's own code), with `Retry-After` in whole seconds (at least 1) until this
//!   core's bucket has a token again.
//! - **The settings** ([`setting`]): rates and bursts as typed values, off by default.
//!
//! Invariants: with no limit configured there is no limiter, and a request pays one branch;
//! a limiter is owned by one core and touched only there; a refused request takes no token.

pub mod bucket;
pub mod buckets;
pub mod identity;
pub mod limiter;
pub mod refusal;
pub mod setting;

pub use bucket::RetryAfterSeconds;
pub use identity::RateLimitKind;
pub use limiter::RateLimiter;
pub use refusal::RateLimitRefusal;
pub use setting::{Burst, RateLimit, RateLimits, RequestsPerSecond};
