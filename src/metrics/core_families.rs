//! coresearch's own metric families: one series per core (requests it answered, its open
//! connections, its search and write queues, the time its requests spend in the core mesh,
//! its major page faults, its CPU time) and one per shard (the disk bytes of its page store and of its
//! vector files), labelled with the core that owns it; and the rate limiters' refusals and
//! buckets by kind of identity, summed over the cores.
//!
//! Invariant: every name starts with `coresearch_`, so no family can be taken for one of
//! Meilisearch's.

use super::core_figures::CoreFigures;
use super::exposition::{Exposition, Labels};
use crate::auth::rate_limit::RateLimitKind;

/// Adds the per-core and per-shard families of `cores` to `exposition`.
pub fn add(exposition: &mut Exposition, cores: &[CoreFigures]) {
    add_per_core(exposition, cores);
    add_per_shard(exposition, cores);
    add_rate_limits(exposition, cores);
}

/// The rate limiters' refusals and buckets, by kind of identity, summed over the cores.
fn add_rate_limits(exposition: &mut Exposition, cores: &[CoreFigures]) {
    let by_kind = |value: &dyn Fn(&CoreFigures, usize) -> u64| {
        RateLimitKind::ALL
            .iter()
            .enumerate()
            .map(|(slot, kind)| {
                let total: u64 = cores.iter().map(|core| value(core, slot)).sum();
                (vec![("kind", kind.label().to_string())], total as f64)
            })
            .collect()
    };
    exposition.counters(
        "coresearch_rate_limited_requests_total",
        "Requests refused with 429 because their API key or tenant token was over its rate limit",
        by_kind(&|core, slot| core.rate_limits.refused[slot]),
    );
    exposition.gauges(
        "coresearch_rate_limit_buckets",
        "Token buckets the cores hold for API keys and tenant tokens",
        by_kind(&|core, slot| core.rate_limits.buckets[slot]),
    );
}

fn core_label(core: &CoreFigures) -> Labels {
    vec![("core", core.core.to_string())]
}

/// A gauge per core, of `value`.
fn per_core_gauges(
    exposition: &mut Exposition,
    name: &str,
    help: &str,
    cores: &[CoreFigures],
    value: impl Fn(&CoreFigures) -> u64,
) {
    let series = cores
        .iter()
        .map(|core| (core_label(core), value(core) as f64))
        .collect();
    exposition.gauges(name, help, series);
}

fn add_per_core(exposition: &mut Exposition, cores: &[CoreFigures]) {
    exposition.counters(
        "coresearch_core_http_requests_total",
        "HTTP requests each core answered",
        cores
            .iter()
            .map(|core| (core_label(core), core.http.requests_answered() as f64))
            .collect(),
    );
    per_core_gauges(
        exposition,
        "coresearch_core_open_connections",
        "Client connections each core serves",
        cores,
        |core| core.open_connections,
    );
    per_core_gauges(
        exposition,
        "coresearch_core_searches_running",
        "Searches each core is running",
        cores,
        |core| core.searches_running,
    );
    per_core_gauges(
        exposition,
        "coresearch_core_searches_waiting",
        "Searches waiting in each core's search queue",
        cores,
        |core| core.searches_waiting,
    );
    per_core_gauges(
        exposition,
        "coresearch_core_write_queue_depth",
        "Write requests for each core's shards received and not answered yet",
        cores,
        |core| core.writes_in_flight,
    );
    exposition.histograms(
        "coresearch_core_mesh_round_trip_seconds",
        "Time the requests each core sends to other cores spend in the core mesh, both ways, \
         the other core's work left out",
        cores
            .iter()
            .map(|core| (core_label(core), core.mesh_round_trips.clone()))
            .collect(),
    );
    exposition.counters(
        "coresearch_core_cpu_seconds_total",
        "CPU seconds, user and system, each core's executor thread used (its rate is the \
         core's load)",
        cores
            .iter()
            .map(|core| (core_label(core), core.cpu_seconds))
            .collect(),
    );
    exposition.counters(
        "coresearch_core_major_page_faults_total",
        "Major page faults of each core's thread (reads it waited for)",
        cores
            .iter()
            .map(|core| (core_label(core), core.major_page_faults as f64))
            .collect(),
    );
}

fn add_per_shard(exposition: &mut Exposition, cores: &[CoreFigures]) {
    let mut page_store = Vec::new();
    let mut vectors = Vec::new();
    for core in cores {
        for shard in &core.shards {
            let labels = vec![
                ("core", core.core.to_string()),
                ("index", shard.index.clone()),
                ("shard", shard.shard.to_string()),
            ];
            page_store.push((labels.clone(), shard.page_store_bytes as f64));
            vectors.push((labels, shard.vector_file_bytes as f64));
        }
    }
    exposition.gauges(
        "coresearch_shard_page_store_bytes",
        "Disk bytes of each shard's page store",
        page_store,
    );
    exposition.gauges(
        "coresearch_shard_vector_file_bytes",
        "Disk bytes of each shard's vector files",
        vectors,
    );
}
