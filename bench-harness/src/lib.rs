//! Datasets, workloads, load driver, side-by-side comparison against any
//! Meilisearch-compatible URL, and micro-benchmarks.

pub mod storage;
