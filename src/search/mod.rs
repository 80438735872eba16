//! Search: `POST`/`GET /indexes/{uid}/search`, `/multi-search` and facet search.
//!
//! A search is decoded ([`parameters`]), checked against its index and clamped
//! ([`prepare`]), run on every shard of the index on the shards' owner cores
//! (`crate::host::search`), merged into the order one unsharded index gives ([`execute`], with
//! [`facets`] summed across shards), and written as Meilisearch writes it ([`response`]), its
//! foreign keys replaced by the foreign documents under `foreignKeys` ([`hydration`]), and its
//! hits reordered for the user under `personalize` ([`personalize`]).
//!
//! Across the network ([`network_search`], [`multi`]): without a leader a networked query asks
//! every remote ([`remote`]); with one, every network shard once ([`shard_partition`]),
//! another owner of the shard when the one asked fails ([`remote_failover`]).
//!
//! Invariant: the shards' hits carry scores that depend only on the document and the query, so
//! the merged order and the facet counts do not depend on how many shards an index has.

pub mod distinct;
pub mod distinct_merge;
pub mod execute;
pub mod facet_search;
pub mod facets;
pub mod hybrid;
pub mod hydration;
pub mod multi;
pub mod network_documents;
pub mod network_facet_search;
pub mod network_search;
pub mod outcome;
pub mod owner_reads;
pub mod parameters;
pub mod personalize;
pub mod pins;
pub mod prepare;
pub mod queue;
pub mod ranked;
pub mod remote;
pub mod remote_failover;
pub mod response;
pub mod rule_fuel;
pub mod rule_matching;
pub mod shard_partition;
pub mod shard_request;
pub mod similar;
pub mod single;
pub mod sort_member;
pub mod stages;
