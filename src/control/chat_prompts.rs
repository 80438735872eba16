//! The prompts of a chat workspace: the system prompt given to the model, and the
//! descriptions of the search tool and of its parameters, with Meilisearch 1.41's defaults.
//!
//! Invariants: a workspace always holds all five prompts (a reset puts the default back);
//! the serde form is Meilisearch's (`system`, `searchDescription`, `searchQParam`,
//! `searchFilterParam`, `searchIndexUidParam`), which dumps carry; a stored form without
//! `searchFilterParam` (older Meilisearch dumps) reads it as its default.

use serde::{Deserialize, Serialize};

/// The default system prompt.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a highly capable research assistant with access to powerful search tools. IMPORTANT INSTRUCTIONS:1. When answering questions, you MUST make multiple tool calls (at least 2-3) to gather comprehensive information.2. Use different search queries for each tool call - vary keywords, rephrase questions, and explore different semantic angles to ensure broad coverage.3. Always explicitly announce BEFORE making each tool call by saying: \"I'll search for [specific information] now.\"4. Combine information from ALL tool calls to provide complete, nuanced answers rather than relying on a single source.5. For complex topics, break down your research into multiple targeted queries rather than using a single generic search. Meilisearch doesn't use the colon (:) syntax to filter but rather the equal (=) one. Separate filters from query and keep the q parameter empty if needed. Same for the filter parameter: keep it empty if need be. If you need to find documents that CONTAINS keywords simply put the keywords in the q parameter do no use a filter for this purpose. Whenever you get an error, read the error message and fix your error. ";

/// The default description of the search tool (the indexes are appended to it).
pub const DEFAULT_SEARCH_DESCRIPTION_PROMPT: &str = "Query: 'best story about Rust before 2018' with year: 2018, 2020, 2021\nlabel: analysis, golang, javascript\ntype: story, link\nvote: 300, 298, 278\n: {\"q\": \"\", \"filter\": \"category = Rust AND type = story AND year < 2018 AND vote > 100\"}\nQuery: 'A black or green car that can go fast with red brakes' with maxspeed_kmh: 200, 150, 130\ncolor: black, grey, red, green\nbrand: Toyota, Renault, Jeep, Ferrari\n: {\"q\": \"red brakes\", \"filter\": \"maxspeed_kmh > 150 AND color IN ['black', green]\"}\nQuery: 'Superman movie released in 2018 or after' with year: 2018, 2020, 2021\ngenres: Drama, Comedy, Adventure, Fiction\n: {\"q\":\"Superman\",\"filter\":\"genres IN [Adventure, Fiction] AND year >= 2018\"}";

/// The default description of the tool's `q` parameter.
pub const DEFAULT_SEARCH_Q_PARAM_PROMPT: &str = "The search query string used to find relevant documents in the index. This should contain keywords or phrases that best represent what the user is looking for. More specific queries will yield more precise results.";

/// The default description of the tool's `filter` parameter (each index's facet values are
/// appended to it).
pub const DEFAULT_SEARCH_FILTER_PARAM_PROMPT: &str = "The search filter string used to find relevant documents in the index. It supports parentheses, `=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY`, `_geoRadius`, or `_geoBoundingBox`. Here is an example: \"price > 100 AND category = 'electronics'\". The following is a list of fields that can be filtered on: ";

/// The default description of the tool's `index_uid` parameter.
pub const DEFAULT_SEARCH_INDEX_UID_PARAM_PROMPT: &str = "The name of the index to search within. An index is a collection of documents organized for search. Selecting the right index ensures the most relevant results for the user query.";

/// The five prompts of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatCompletionPrompts {
    #[serde(default)]
    pub system: String,
    #[serde(default)]
    pub search_description: String,
    #[serde(default)]
    pub search_q_param: String,
    #[serde(default = "default_search_filter_param")]
    pub search_filter_param: String,
    #[serde(default)]
    pub search_index_uid_param: String,
}

fn default_search_filter_param() -> String {
    DEFAULT_SEARCH_FILTER_PARAM_PROMPT.to_owned()
}

impl Default for ChatCompletionPrompts {
    fn default() -> Self {
        ChatCompletionPrompts {
            system: DEFAULT_SYSTEM_PROMPT.to_owned(),
            search_description: DEFAULT_SEARCH_DESCRIPTION_PROMPT.to_owned(),
            search_q_param: DEFAULT_SEARCH_Q_PARAM_PROMPT.to_owned(),
            search_filter_param: DEFAULT_SEARCH_FILTER_PARAM_PROMPT.to_owned(),
            search_index_uid_param: DEFAULT_SEARCH_INDEX_UID_PARAM_PROMPT.to_owned(),
        }
    }
}
