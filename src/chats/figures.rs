//! What chat completions tell `/metrics`, per core: the searches the model asked for
//! (`meilisearch_chat_searches_total`, by `type`) and the tokens the models reported
//! (`meilisearch_chat_prompt_tokens_total`, `…_completion_tokens_total`, `…_tokens_total`, by
//! `workspace` and `model`), Meilisearch 1.41's chat families.
//!
//! Invariants: the figures live in a thread-local of the core's executor, touched only by
//! that core; a scrape copies them ([`snapshot`]) and sums every core's ([`ChatFigures::add`]).

use std::cell::RefCell;
use std::collections::BTreeMap;

/// The `type` label of the searches a chat's search tool runs.
pub const INTERNAL_SEARCH: &str = "internal";

/// Tokens used, as the model reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
}

/// The chat figures of one core, or of the instance once summed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatFigures {
    /// Searches by type.
    pub searches: BTreeMap<String, u64>,
    /// Tokens by workspace and model.
    pub tokens: BTreeMap<(String, String), TokenCounts>,
}

impl ChatFigures {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ChatFigures) {
        for (kind, count) in &other.searches {
            *self.searches.entry(kind.clone()).or_insert(0) += count;
        }
        for (key, counts) in &other.tokens {
            let entry = self.tokens.entry(key.clone()).or_default();
            entry.prompt += counts.prompt;
            entry.completion += counts.completion;
            entry.total += counts.total;
        }
    }
}

thread_local! {
    static FIGURES: RefCell<ChatFigures> = RefCell::new(ChatFigures::default());
}

/// Counts one search of kind `kind`.
pub fn record_search(kind: &str) {
    FIGURES.with(|figures| {
        *figures
            .borrow_mut()
            .searches
            .entry(kind.to_owned())
            .or_insert(0) += 1;
    });
}

/// Counts the tokens a model reported for `workspace` and `model`.
pub fn record_usage(workspace: &str, model: &str, counts: TokenCounts) {
    FIGURES.with(|figures| {
        let mut figures = figures.borrow_mut();
        let entry = figures
            .tokens
            .entry((workspace.to_owned(), model.to_owned()))
            .or_default();
        entry.prompt += counts.prompt;
        entry.completion += counts.completion;
        entry.total += counts.total;
    });
}

/// A copy of this core's figures.
pub fn snapshot() -> ChatFigures {
    FIGURES.with(|figures| figures.borrow().clone())
}
