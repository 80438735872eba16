//! Everything inside one shard: documents, analysis, inverted, facet, geo and vector indexes,
//! filters, ranking, plus the rendezvous hashing that assigns documents to shards.
//!
//! A synchronous library: it knows nothing of the runtime, sockets or HTTP.

pub mod analysis;
pub mod documents;
pub mod filter;
pub mod rendezvous;
pub mod search;
pub mod shard;
#[cfg(test)]
mod test_database;
#[cfg(test)]
mod test_random;
