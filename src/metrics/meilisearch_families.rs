//! The metric families Meilisearch 1.41 exports, with its names, help texts, types and
//! labels, from the figures of a scrape. The values are ours: summed over the cores where
//! Meilisearch has one process-wide value.
//!
//! Meilisearch registers some families only once it used them; a family is left out here
//! when Meilisearch would leave it out of a scrape of the same instance: the HTTP families
//! before any request, the progress of a batch when none runs or finished, `last_update`
//! before any index, `personalized_search_requests` before the first personalized search,
//! and the chat families before any chat search or reported token.
//!
//! Invariant: `meilisearch_task_queue_size_until_stop_registering` uses the share of the
//! queue's file past which registrations are refused ([`QUEUE_FULL_PERCENT`]).

use std::collections::BTreeMap;
use std::time::Duration;

use time::OffsetDateTime;

use super::core_figures::CoreFigures;
use super::exposition::{Exposition, Labels};
use super::scrape::InstanceFigures;
use crate::histogram::Histogram;
use crate::tasks::queue::QUEUE_FULL_PERCENT;

/// Adds every Meilisearch family of `instance` and `cores` (at `now`) to `exposition`.
pub fn add(
    exposition: &mut Exposition,
    instance: &InstanceFigures,
    cores: &[CoreFigures],
    now: OffsetDateTime,
) {
    add_http(exposition, cores);
    add_statistics(exposition, instance);
    add_search_queue(exposition, cores);
    add_tasks(exposition, instance);
    add_batches(exposition, instance);
    add_task_queue(exposition, instance, now);
    add_personalized_searches(exposition, cores);
    add_chat(exposition, cores);
}

/// `meilisearch_personalized_search_requests`, once some search asked for `personalize`
/// (Meilisearch registers the gauge at its first increment).
fn add_personalized_searches(exposition: &mut Exposition, cores: &[CoreFigures]) {
    let count: u64 = cores.iter().map(|core| core.personalized_searches).sum();
    if count > 0 {
        exposition.gauge(
            "meilisearch_personalized_search_requests",
            "Meilisearch number of search requests with personalization",
            count as f64,
        );
    }
}

/// `meilisearch_chat_searches_total` and the token counters of chat completions.
fn add_chat(exposition: &mut Exposition, cores: &[CoreFigures]) {
    let mut chat = crate::chats::figures::ChatFigures::default();
    for core in cores {
        chat.add(&core.chat);
    }
    exposition.counters(
        "meilisearch_chat_searches_total",
        "Total number of searches performed by the chat route",
        chat.searches
            .iter()
            .map(|(kind, count)| (vec![("type", kind.clone())], *count as f64))
            .collect(),
    );
    let tokens = |pick: fn(&crate::chats::figures::TokenCounts) -> u64| -> Vec<(Labels, f64)> {
        chat.tokens
            .iter()
            .map(|((workspace, model), counts)| {
                let labels = vec![("workspace", workspace.clone()), ("model", model.clone())];
                (labels, pick(counts) as f64)
            })
            .collect()
    };
    exposition.counters(
        "meilisearch_chat_prompt_tokens_total",
        "Total number of prompt tokens consumed",
        tokens(|counts| counts.prompt),
    );
    exposition.counters(
        "meilisearch_chat_completion_tokens_total",
        "Total number of completion tokens consumed",
        tokens(|counts| counts.completion),
    );
    exposition.counters(
        "meilisearch_chat_tokens_total",
        "Total number of tokens consumed (prompt + completion)",
        tokens(|counts| counts.total),
    );
}

/// `meilisearch_http_requests_total` and `meilisearch_http_response_time_seconds`.
fn add_http(exposition: &mut Exposition, cores: &[CoreFigures]) {
    let mut requests: BTreeMap<(String, String, u16), u64> = BTreeMap::new();
    let mut times: BTreeMap<(String, String), Histogram> = BTreeMap::new();
    for core in cores {
        for series in &core.http.requests {
            let key = (series.method.clone(), series.path.clone(), series.status);
            *requests.entry(key).or_insert(0) += series.count;
        }
        for series in &core.http.response_times {
            let key = (series.method.clone(), series.path.clone());
            match times.get_mut(&key) {
                Some(histogram) => histogram.merge(&series.histogram),
                None => {
                    times.insert(key, series.histogram.clone());
                }
            }
        }
    }
    exposition.counters(
        "meilisearch_http_requests_total",
        "Meilisearch HTTP requests total",
        requests
            .into_iter()
            .map(|((method, path, status), count)| {
                let labels = vec![
                    ("method", method),
                    ("path", path),
                    ("status", status.to_string()),
                ];
                (labels, count as f64)
            })
            .collect(),
    );
    exposition.histograms(
        "meilisearch_http_response_time_seconds",
        "Meilisearch HTTP response times",
        times
            .into_iter()
            .map(|((method, path), histogram)| {
                (vec![("method", method), ("path", path)], histogram)
            })
            .collect(),
    );
}

/// The figures of `GET /stats`.
fn add_statistics(exposition: &mut Exposition, instance: &InstanceFigures) {
    exposition.gauge(
        "meilisearch_db_size_bytes",
        "Meilisearch DB Size In Bytes",
        instance.database_bytes as f64,
    );
    exposition.gauge(
        "meilisearch_used_db_size_bytes",
        "Meilisearch Used DB Size In Bytes",
        instance.used_database_bytes as f64,
    );
    exposition.gauge(
        "meilisearch_index_count",
        "Meilisearch Index Count",
        instance.index_documents.len() as f64,
    );
    exposition.gauges(
        "meilisearch_index_docs_count",
        "Meilisearch Index Docs Count",
        instance
            .index_documents
            .iter()
            .map(|(index, documents)| (vec![("index", index.clone())], *documents as f64))
            .collect(),
    );
    if let Some(last_update) = instance.last_update {
        exposition.gauge(
            "meilisearch_last_update",
            "Meilisearch Last Update",
            last_update.unix_timestamp() as f64,
        );
    }
}

/// The search queue: its configured size, and the searches running and waiting on every
/// core.
fn add_search_queue(exposition: &mut Exposition, cores: &[CoreFigures]) {
    let size = cores.first().map_or(0, |core| core.search_queue_size);
    let running: u64 = cores.iter().map(|core| core.searches_running).sum();
    let waiting: u64 = cores.iter().map(|core| core.searches_waiting).sum();
    exposition.gauge(
        "meilisearch_search_queue_size",
        "Meilisearch Search Queue Size",
        size as f64,
    );
    exposition.gauge(
        "meilisearch_searches_running",
        "Meilisearch Searches Running",
        running as f64,
    );
    exposition.gauge(
        "meilisearch_searches_waiting_to_be_processed",
        "Meilisearch Searches Being Processed",
        waiting as f64,
    );
}

/// `meilisearch_nb_tasks`: tasks by status, by type and by index.
fn add_tasks(exposition: &mut Exposition, instance: &InstanceFigures) {
    let queue = &instance.tasks.queue;
    let series = |kind: &'static str, value: &str, count: u64| -> (Labels, f64) {
        (
            vec![("kind", kind.to_owned()), ("value", value.to_owned())],
            count as f64,
        )
    };
    let mut all = Vec::new();
    all.extend(
        queue
            .statuses
            .iter()
            .map(|(status, count)| series("statuses", status, *count)),
    );
    all.extend(
        queue
            .kinds
            .iter()
            .map(|(kind, count)| series("types", kind, *count)),
    );
    all.extend(
        queue
            .indexes
            .iter()
            .map(|(index, count)| series("indexes", index, *count)),
    );
    exposition.gauges("meilisearch_nb_tasks", "Meilisearch Number of tasks", all);
}

/// The batch being processed (its steps' completion) and the last finished one (its steps'
/// times).
fn add_batches(exposition: &mut Exposition, instance: &InstanceFigures) {
    let tasks = &instance.tasks;
    exposition.gauge(
        "meilisearch_is_indexing",
        "Meilisearch Is Indexing",
        if tasks.processing.is_some() { 1.0 } else { 0.0 },
    );
    let running = match &tasks.processing {
        Some((batch_uid, Some(progress))) => progress
            .steps
            .iter()
            .map(|step| {
                let labels = vec![
                    ("batch_uid", batch_uid.to_string()),
                    ("step_name", step.current_step.clone()),
                ];
                (labels, f64::from(step.finished) / f64::from(step.total))
            })
            .collect(),
        _ => Vec::new(),
    };
    exposition.gauges(
        "meilisearch_batch_running_progress_trace",
        "The currently running progress trace",
        running,
    );
    let finished = match &tasks.queue.last_finished_batch {
        Some((batch_uid, trace)) => trace
            .iter()
            .filter_map(|(step, duration)| {
                let milliseconds = duration.as_str().and_then(trace_duration)?.as_millis();
                let labels = vec![
                    ("batch_uid", batch_uid.to_string()),
                    ("step_name", step.clone()),
                ];
                Some((labels, milliseconds as f64))
            })
            .collect(),
        None => Vec::new(),
    };
    exposition.gauges(
        "meilisearch_last_finished_batches_progress_trace_ms",
        "The last few batches progress trace in milliseconds",
        finished,
    );
}

/// The task queue: how long its oldest waiting task has waited, and its file's sizes.
fn add_task_queue(exposition: &mut Exposition, instance: &InstanceFigures, now: OffsetDateTime) {
    let queue = &instance.tasks.queue;
    let latency = queue
        .oldest_waiting_enqueued_at
        .map_or(0.0, |enqueued_at| (now - enqueued_at).as_seconds_f64());
    exposition.gauge(
        "meilisearch_task_queue_latency_seconds",
        "Meilisearch Task Queue Latency in Seconds",
        latency,
    );
    exposition.gauge(
        "meilisearch_task_queue_max_size",
        "Meilisearch Task Queue Max Size",
        queue.maximum_bytes as f64,
    );
    exposition.gauge(
        "meilisearch_task_queue_used_size",
        "Meilisearch Task Queue Used Size",
        queue.used_bytes as f64,
    );
    let registering_limit = queue.maximum_bytes.saturating_mul(QUEUE_FULL_PERCENT) / 100;
    exposition.gauge(
        "meilisearch_task_queue_size_until_stop_registering",
        "Meilisearch Task Queue Size Until Stop Registering",
        registering_limit.saturating_sub(queue.used_bytes) as f64,
    );
}

/// A step time of a batch's `progressTrace` (`1.25s`, `380.20ms`, `12.00µs`, `3ns`).
fn trace_duration(text: &str) -> Option<Duration> {
    let unit_start = text
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(unit_start);
    let number: f64 = number.parse().ok()?;
    let seconds_per_unit = match unit.trim() {
        "ns" => 1e-9,
        "µs" | "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(number * seconds_per_unit).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_durations_read_as_rust_writes_them() {
        assert_eq!(
            trace_duration("19.36s"),
            Some(Duration::from_millis(19_360))
        );
        assert_eq!(
            trace_duration("367.25ms").map(|duration| duration.as_millis()),
            Some(367)
        );
        assert_eq!(
            trace_duration("12.00µs").map(|duration| duration.as_micros()),
            Some(12)
        );
        assert_eq!(trace_duration("3ns"), Some(Duration::from_nanos(3)));
        assert_eq!(trace_duration("soon"), None);
        assert_eq!(trace_duration("12 parsecs"), None);
    }
}
