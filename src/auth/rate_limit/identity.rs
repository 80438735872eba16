//! Who a request is charged to: the kind of identity (API key or tenant token) and, for a
//! tenant token, the digest its bucket is found by.
//!
//! Invariants: a tenant token's digest is keyed by a secret drawn when the core's limiter is
//! made, so nobody outside the process can build two tokens that share a bucket; the token
//! itself is never stored.

use std::hash::BuildHasher;

/// The kinds of identity that have limits of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateLimitKind {
    /// A request authenticated with an API key.
    ApiKey,
    /// A request authenticated with a tenant token.
    TenantToken,
}

impl RateLimitKind {
    /// Every kind, in the order metrics list them.
    pub const ALL: [RateLimitKind; 2] = [RateLimitKind::ApiKey, RateLimitKind::TenantToken];

    /// The kind as a metric label and as the error message names it.
    pub fn label(self) -> &'static str {
        match self {
            RateLimitKind::ApiKey => "api_key",
            RateLimitKind::TenantToken => "tenant_token",
        }
    }

    /// The kind in an error message.
    pub fn description(self) -> &'static str {
        match self {
            RateLimitKind::ApiKey => "API key",
            RateLimitKind::TenantToken => "tenant token",
        }
    }
}

/// A tenant token's bucket key: a keyed 64-bit hash of the token's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenDigest(u64);

/// Makes the digests of one core's tenant tokens.
#[derive(Debug, Clone, Default)]
pub struct TokenDigester {
    /// Random keys, drawn once per limiter.
    keys: std::collections::hash_map::RandomState,
}

impl TokenDigester {
    /// The digest of `token`.
    pub fn digest(&self, token: &str) -> TokenDigest {
        TokenDigest(self.keys.hash_one(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_token_has_one_digest_and_two_tokens_two() {
        let digester = TokenDigester::default();
        assert_eq!(digester.digest("a.b.c"), digester.digest("a.b.c"));
        assert_ne!(digester.digest("a.b.c"), digester.digest("a.b.d"));
        assert_eq!(RateLimitKind::TenantToken.label(), "tenant_token");
        assert_eq!(RateLimitKind::ALL[0], RateLimitKind::ApiKey);
    }
}
