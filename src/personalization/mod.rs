//! Personalized search: `personalize: {"userContext": …}` in a search reorders the page's
//! hits through a Cohere-compatible rerank API, as Meilisearch 1.41 does with
//! `--experimental-personalization-api-key`.
//!
//! After the search has run (its errors come first) and its hits are written, the page's
//! hits are sent with the user's context and the query ([`hits`]) to the rerank service
//! ([`cohere`]), asked within the search's time budget ([`call`]), and put in the order it
//! answers. Without a key (or with a blank one) a search that asks for personalization is
//! refused with `feature_not_enabled`. When the budget runs out before an answer — the
//! service is down, slow, or keeps answering 5xx or 429 — the hits keep the search's order
//! and a warning is logged; a final refusal of the service (400, 401, another 4xx) is the
//! search's error ([`error`]).
//!
//! Where this departs from Meilisearch 1.41: the endpoint is `--experimental-personalization-url`
//! (`CORESEARCH_EXPERIMENTAL_PERSONALIZATION_URL`), by default the URL Meilisearch always
//! calls (`https://api.cohere.ai/v1/rerank`), so that a self-hosted Cohere-compatible
//! service (or a test's) can be used; and attempts stop at the search's budget (see
//! [`call`]).
//!
//! Invariants: the API key is never logged nor written into an error; the call runs on the
//! core that received the search, through that core's outgoing client, without blocking it.

pub mod call;
pub mod cohere;
pub mod error;
pub mod hits;
pub mod retry;

use std::fmt;
use std::time::Instant;

use serde_json::Value;

use crate::errors::ResponseError;
use call::{CallError, Endpoint};

/// The discussion `feature_not_enabled` points to.
const PERSONALIZATION_DISCUSSION_LINK: &str = "https://github.com/orgs/meilisearch/discussions/866";

/// The rerank service personalized searches call, or none.
#[derive(Clone)]
pub enum Personalization {
    /// No key: a search with `personalize` is refused.
    Disabled,
    /// Hits are reranked by the service at `url`.
    Enabled { url: url::Url, api_key: String },
}

impl fmt::Debug for Personalization {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Personalization::Disabled => formatter.write_str("Disabled"),
            Personalization::Enabled { url, .. } => formatter
                .debug_struct("Enabled")
                .field("url", &url.as_str())
                .field("api_key", &"[redacted]")
                .finish(),
        }
    }
}

impl Personalization {
    /// The service of `--experimental-personalization-api-key` and
    /// `--experimental-personalization-url`: none without a key or with a blank one.
    pub fn from_options(api_key: Option<&str>, url: &url::Url) -> Personalization {
        match api_key {
            Some(key) if !key.trim().is_empty() => Personalization::Enabled {
                url: url.clone(),
                api_key: key.to_owned(),
            },
            _ => Personalization::Disabled,
        }
    }

    /// `hits` in the order the service gives them for `user_context` and the search's `q`
    /// (`query`), asked before `deadline` (`None`: none); the hits as they are when the
    /// deadline passes first.
    pub async fn rerank(
        &self,
        hits: Vec<Value>,
        user_context: &str,
        query: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Vec<Value>, ResponseError> {
        let Personalization::Enabled { url, api_key } = self else {
            return Err(ResponseError::feature_not_enabled(
                "reranking search results",
                "personalization",
                PERSONALIZATION_DISCUSSION_LINK,
            ));
        };
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            tracing::warn!("could not rerank the hits: the search's time budget is spent");
            return Ok(hits);
        }
        if hits.is_empty() {
            return Ok(hits);
        }
        let body =
            cohere::request_body(&hits::prompt(user_context, query), &hits::documents(&hits));
        let client = crate::outgoing::shared::core_client()
            .ok_or_else(|| ResponseError::internal("searches run only on a core"))?;
        let endpoint = Endpoint { url, api_key };
        match call::rerank_order(&client, &endpoint, &body, deadline).await {
            Ok(order) => {
                tracing::debug!(hits = hits.len(), "the hits were reranked");
                Ok(hits::reorder(hits, &order))
            }
            Err(CallError::DeadlineExceeded) => Ok(hits),
            Err(CallError::Failed(error)) => Err(error.into_response_error()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_or_missing_key_leaves_personalization_off() {
        let url = url::Url::parse("https://api.cohere.ai/v1/rerank").expect("a literal URL parses");
        for key in [None, Some(""), Some("  \t")] {
            assert!(matches!(
                Personalization::from_options(key, &url),
                Personalization::Disabled
            ));
        }
        let enabled = Personalization::from_options(Some("s3cret"), &url);
        assert!(matches!(enabled, Personalization::Enabled { .. }));
        assert!(!format!("{enabled:?}").contains("s3cret"));
    }
}
