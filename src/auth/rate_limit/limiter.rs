//! One core's rate limiter: the buckets of the API keys and of the tenant tokens that sent
//! requests to this core, and the decision for one authenticated request.
//!
//! Who is charged ([`RateLimiter::charge`]):
//! - an API key: its bucket is found by the key's uid (so a key sent as its key string is
//!   one identity however it is spelled, and a deleted key's bucket simply idles out);
//! - a tenant token: its own bucket, found by a keyed digest of the token's text, under the
//!   tenant-token limit; its parent key's bucket is not charged;
//! - the master key, and every request of an instance without a master key: never (no
//!   identity to charge; an unprotected instance is limited, if at all, in front of it).
//!
//! A core's share of a limit configured at `rate` per second with bursts of `burst` is
//! `rate / cores` per second with bursts of `ceil(burst / cores)` ([`core_shape`]).
//!
//! Invariants: the limiter belongs to one core and is touched only by it (`RefCell`s, no
//! lock, no atomic); a kind without a limit keeps no bucket; a refused request takes no
//! token.

use std::cell::RefCell;
use std::time::Instant;

use uuid::Uuid;

use super::bucket::{BucketShape, Moment};
use super::buckets::Buckets;
use super::identity::{RateLimitKind, TokenDigest, TokenDigester};
use super::refusal::RateLimitRefusal;
use super::setting::{RateLimit, RateLimits};
use crate::auth::AuthContext;
use crate::auth::authenticate::bearer_token;

/// Nanoseconds in a second, as a float for the interval's division.
const NANOSECONDS_PER_SECOND: f64 = 1e9;

/// The bucket every identity of one kind has on a core that gets `1 / cores` of `limit`:
/// one token every `cores / rate` seconds (rounded up to the nanosecond), a capacity of
/// `ceil(burst / cores)`.
pub fn core_shape(limit: &RateLimit, cores: usize) -> BucketShape {
    let cores = cores.max(1);
    let interval = NANOSECONDS_PER_SECOND * cores as f64 / limit.requests_per_second.get();
    // The rate's bounds keep the interval far below `u64::MAX` nanoseconds.
    let interval_nanoseconds = interval.ceil() as u64;
    let cores = u32::try_from(cores).unwrap_or(u32::MAX);
    BucketShape::new(interval_nanoseconds, limit.burst.get().div_ceil(cores))
}

/// One kind's limit and this core's buckets for it.
#[derive(Debug)]
struct KindLimiter<Identity> {
    limit: RateLimit,
    buckets: RefCell<Buckets<Identity>>,
}

impl<Identity: std::hash::Hash + Eq> KindLimiter<Identity> {
    fn new(limit: RateLimit, cores: usize) -> KindLimiter<Identity> {
        KindLimiter {
            limit,
            buckets: RefCell::new(Buckets::new(core_shape(&limit, cores))),
        }
    }
}

/// The rate limiter of one core.
#[derive(Debug)]
pub struct RateLimiter {
    /// The start of the limiter's clock.
    started: Instant,
    /// The cores the limits are shared out between.
    cores: usize,
    api_keys: Option<KindLimiter<Uuid>>,
    tenant_tokens: Option<KindLimiter<TokenDigest>>,
    digester: TokenDigester,
}

impl RateLimiter {
    /// The limiter of one of `cores` cores; `None` when no limit is set, so an instance
    /// without limits pays one branch per request.
    pub fn for_core(limits: &RateLimits, cores: usize) -> Option<RateLimiter> {
        limits.any().then(|| RateLimiter {
            started: Instant::now(),
            cores: cores.max(1),
            api_keys: limits.api_key.map(|limit| KindLimiter::new(limit, cores)),
            tenant_tokens: limits
                .tenant_token
                .map(|limit| KindLimiter::new(limit, cores)),
            digester: TokenDigester::default(),
        })
    }

    /// Charges an authenticated request, whose context is `context` and whose
    /// `Authorization` header is `authorization`, to its identity's bucket now.
    pub fn charge(
        &self,
        context: &AuthContext,
        authorization: Option<&[u8]>,
    ) -> Result<(), RateLimitRefusal> {
        self.charge_at(
            context,
            authorization,
            Moment::after(self.started.elapsed()),
        )
    }

    /// [`RateLimiter::charge`] at `now` on the limiter's clock.
    pub fn charge_at(
        &self,
        context: &AuthContext,
        authorization: Option<&[u8]>,
        now: Moment,
    ) -> Result<(), RateLimitRefusal> {
        // The master key and open access have no key uid: never charged.
        let Some(key_uid) = context.key_uid() else {
            return Ok(());
        };
        if context.is_tenant_token() {
            let Some(limiter) = &self.tenant_tokens else {
                return Ok(());
            };
            // Authentication read this very header, so the token is there.
            let Ok(Some(token)) = bearer_token(authorization) else {
                return Ok(());
            };
            let digest = self.digester.digest(token);
            let taken = limiter.buckets.borrow_mut().take(digest, now);
            return taken.map_err(|retry_after| {
                self.refusal(RateLimitKind::TenantToken, limiter.limit, retry_after)
            });
        }
        let Some(limiter) = &self.api_keys else {
            return Ok(());
        };
        let taken = limiter.buckets.borrow_mut().take(key_uid, now);
        taken.map_err(|retry_after| self.refusal(RateLimitKind::ApiKey, limiter.limit, retry_after))
    }

    fn refusal(
        &self,
        kind: RateLimitKind,
        limit: RateLimit,
        retry_after: super::bucket::RetryAfterSeconds,
    ) -> RateLimitRefusal {
        RateLimitRefusal {
            kind,
            limit,
            cores: self.cores,
            retry_after,
        }
    }

    /// The buckets of `kind` this core holds.
    pub fn buckets_held(&self, kind: RateLimitKind) -> usize {
        match kind {
            RateLimitKind::ApiKey => self
                .api_keys
                .as_ref()
                .map_or(0, |limiter| limiter.buckets.borrow().len()),
            RateLimitKind::TenantToken => self
                .tenant_tokens
                .as_ref()
                .map_or(0, |limiter| limiter.buckets.borrow().len()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::auth::rate_limit::setting::{Burst, RequestsPerSecond};
    use crate::auth::tenant_token::SearchRules;

    const SECOND: u64 = 1_000_000_000;

    fn limit(rate: &str, burst: u64) -> RateLimit {
        RateLimit::new(
            RequestsPerSecond::parse(rate).expect("a rate in range"),
            Burst::new(burst),
        )
    }

    fn at(nanoseconds: u64) -> Moment {
        Moment::after(std::time::Duration::from_nanos(nanoseconds))
    }

    fn key(uid: u128) -> AuthContext {
        AuthContext::for_key(Uuid::from_u128(uid), Vec::new(), None, false)
    }

    fn tenant(uid: u128) -> AuthContext {
        let rules = SearchRules::Set(std::collections::BTreeSet::new());
        AuthContext::for_key(Uuid::from_u128(uid), Vec::new(), Some(rules), false)
    }

    #[test]
    fn a_core_gets_its_share_of_the_rate_and_of_the_burst_rounded_up() {
        let shape = core_shape(&limit("10", 5), 1);
        assert_eq!(
            (shape.interval_nanoseconds(), shape.capacity()),
            (SECOND / 10, 5)
        );
        let shape = core_shape(&limit("10", 5), 4);
        assert_eq!(
            (shape.interval_nanoseconds(), shape.capacity()),
            (SECOND * 4 / 10, 2)
        );
        let shape = core_shape(&limit("0.001", 1), 4096);
        assert_eq!(shape.interval_nanoseconds(), 4096 * 1_000 * SECOND);
        assert_eq!(shape.capacity(), 1);
    }

    #[test]
    fn no_limit_makes_no_limiter() {
        assert!(RateLimiter::for_core(&RateLimits::default(), 2).is_none());
    }

    #[test]
    fn the_master_key_and_open_access_are_never_charged() {
        let limits = RateLimits {
            api_key: Some(limit("1", 1)),
            tenant_token: Some(limit("1", 1)),
        };
        let limiter = RateLimiter::for_core(&limits, 1).expect("limits are configured");
        for _ in 0..10 {
            assert_eq!(
                limiter.charge_at(&AuthContext::full_access(), None, at(0)),
                Ok(())
            );
        }
        assert_eq!(limiter.buckets_held(RateLimitKind::ApiKey), 0);
    }

    #[test]
    fn keys_are_charged_one_bucket_each_and_refill() {
        let limits = RateLimits {
            api_key: Some(limit("2", 2)),
            tenant_token: None,
        };
        let limiter = RateLimiter::for_core(&limits, 1).expect("limits are configured");
        assert_eq!(limiter.charge_at(&key(1), None, at(0)), Ok(()));
        assert_eq!(limiter.charge_at(&key(1), None, at(0)), Ok(()));
        let refusal = limiter.charge_at(&key(1), None, at(0)).unwrap_err();
        assert_eq!(refusal.kind, RateLimitKind::ApiKey);
        assert_eq!(refusal.retry_after.get(), 1);
        assert_eq!(
            limiter.charge_at(&key(2), None, at(0)),
            Ok(()),
            "another key"
        );
        assert_eq!(limiter.charge_at(&key(1), None, at(SECOND / 2)), Ok(()));
        assert_eq!(limiter.buckets_held(RateLimitKind::ApiKey), 2);
        // Tenant tokens have no limit here.
        let header = Some(b"Bearer a.b.c".as_slice());
        for _ in 0..10 {
            assert_eq!(limiter.charge_at(&tenant(1), header, at(0)), Ok(()));
        }
    }

    #[test]
    fn each_tenant_token_has_its_own_bucket_apart_from_its_parent_key() {
        let limits = RateLimits {
            api_key: Some(limit("1", 1)),
            tenant_token: Some(limit("1", 1)),
        };
        let limiter = RateLimiter::for_core(&limits, 1).expect("limits are configured");
        let first = Some(b"Bearer first.token.x".as_slice());
        let second = Some(b"Bearer second.token.x".as_slice());
        assert_eq!(limiter.charge_at(&tenant(1), first, at(0)), Ok(()));
        let refusal = limiter.charge_at(&tenant(1), first, at(0)).unwrap_err();
        assert_eq!(refusal.kind, RateLimitKind::TenantToken);
        assert_eq!(limiter.charge_at(&tenant(1), second, at(0)), Ok(()));
        assert_eq!(
            limiter.charge_at(&key(1), None, at(0)),
            Ok(()),
            "the parent key"
        );
        assert_eq!(limiter.buckets_held(RateLimitKind::TenantToken), 2);
        assert_eq!(limiter.buckets_held(RateLimitKind::ApiKey), 1);
    }
}
