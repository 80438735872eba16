//! The Prometheus text exposition format (version 0.0.4), written by the `prometheus` crate's
//! text encoder from the figures a scrape gathered — the format Meilisearch's `/metrics`
//! answers in.
//!
//! Invariants, as the `prometheus` registry gathers them: families come out sorted by name,
//! the series of a family sorted by their label values, the labels of a series sorted by
//! name; a family without series is left out.

use prometheus::proto::{
    Bucket, Counter, Gauge, Histogram as HistogramModel, LabelPair, Metric, MetricFamily,
    MetricType,
};
use prometheus::{Encoder, TextEncoder};

use crate::histogram::Histogram;

/// The `content-type` of the answer.
pub const TEXT_FORMAT: &str = prometheus::TEXT_FORMAT;

/// The labels of one series: name and value.
pub type Labels = Vec<(&'static str, String)>;

/// Metric families being gathered.
#[derive(Default)]
pub struct Exposition {
    families: Vec<MetricFamily>,
}

impl Exposition {
    /// A gauge without labels.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.gauges(name, help, vec![(Vec::new(), value)]);
    }

    /// A gauge family of labelled series.
    pub fn gauges(&mut self, name: &str, help: &str, series: Vec<(Labels, f64)>) {
        let metrics = series
            .into_iter()
            .map(|(labels, value)| {
                let mut metric = Metric::from_label(label_pairs(labels));
                let mut gauge = Gauge::default();
                gauge.set_value(value);
                metric.set_gauge(gauge);
                metric
            })
            .collect();
        self.push(name, help, MetricType::GAUGE, metrics);
    }

    /// A counter family of labelled series.
    pub fn counters(&mut self, name: &str, help: &str, series: Vec<(Labels, f64)>) {
        let metrics = series
            .into_iter()
            .map(|(labels, value)| {
                let mut metric = Metric::from_label(label_pairs(labels));
                let mut counter = Counter::default();
                counter.set_value(value);
                metric.set_counter(counter);
                metric
            })
            .collect();
        self.push(name, help, MetricType::COUNTER, metrics);
    }

    /// A histogram family of labelled series.
    pub fn histograms(&mut self, name: &str, help: &str, series: Vec<(Labels, Histogram)>) {
        let metrics = series
            .into_iter()
            .map(|(labels, histogram)| {
                let mut metric = Metric::from_label(label_pairs(labels));
                metric.set_histogram(histogram_model(&histogram));
                metric
            })
            .collect();
        self.push(name, help, MetricType::HISTOGRAM, metrics);
    }

    fn push(&mut self, name: &str, help: &str, kind: MetricType, mut metrics: Vec<Metric>) {
        if metrics.is_empty() {
            return;
        }
        metrics.sort_by(|first, second| {
            let values = |metric: &Metric| {
                metric
                    .get_label()
                    .iter()
                    .map(|pair| pair.value().to_owned())
                    .collect::<Vec<_>>()
            };
            values(first).cmp(&values(second))
        });
        let mut family = MetricFamily::default();
        family.set_name(name.to_owned());
        family.set_help(help.to_owned());
        family.set_field_type(kind);
        family.set_metric(metrics);
        self.families.push(family);
    }

    /// The text of every family, sorted by name.
    pub fn into_text(mut self) -> String {
        self.families
            .sort_by(|first, second| first.name().cmp(second.name()));
        let mut text = Vec::new();
        match TextEncoder::new().encode(&self.families, &mut text) {
            Ok(()) => String::from_utf8_lossy(&text).into_owned(),
            // Every family has a name and a series (checked in `push`): the encoder's only
            // refusals. Writing to a vector cannot fail.
            Err(error) => {
                debug_assert!(false, "the text encoder refused: {error}");
                String::new()
            }
        }
    }
}

/// The label pairs of a series, sorted by name.
fn label_pairs(labels: Labels) -> Vec<LabelPair> {
    let mut pairs: Vec<LabelPair> = labels
        .into_iter()
        .map(|(name, value)| {
            let mut pair = LabelPair::default();
            pair.set_name(name.to_owned());
            pair.set_value(value);
            pair
        })
        .collect();
    pairs.sort_by(|first, second| first.name().cmp(second.name()));
    pairs
}

fn histogram_model(histogram: &Histogram) -> HistogramModel {
    let mut model = HistogramModel::default();
    model.set_sample_count(histogram.count());
    model.set_sample_sum(histogram.sum_seconds());
    let buckets = histogram
        .bounds()
        .iter()
        .zip(histogram.cumulative_counts())
        .map(|(bound, count)| {
            let mut bucket = Bucket::default();
            bucket.set_upper_bound(*bound);
            bucket.set_cumulative_count(count);
            bucket
        })
        .collect();
    model.set_bucket(buckets);
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_sorted_by_name_and_series_by_labels() {
        let mut exposition = Exposition::default();
        exposition.gauge("zeta_total", "Last", 1.0);
        exposition.counters(
            "alpha_requests_total",
            "Requests",
            vec![
                (
                    vec![("status", "404".into()), ("method", "GET".into())],
                    2.0,
                ),
                (
                    vec![("status", "200".into()), ("method", "GET".into())],
                    5.0,
                ),
            ],
        );
        exposition.gauges("empty", "Nothing", Vec::new());
        let text = exposition.into_text();
        assert_eq!(
            text,
            "# HELP alpha_requests_total Requests\n\
             # TYPE alpha_requests_total counter\n\
             alpha_requests_total{method=\"GET\",status=\"200\"} 5\n\
             alpha_requests_total{method=\"GET\",status=\"404\"} 2\n\
             # HELP zeta_total Last\n\
             # TYPE zeta_total gauge\n\
             zeta_total 1\n"
        );
    }

    #[test]
    fn a_histogram_has_cumulative_buckets_an_infinite_one_a_sum_and_a_count() {
        const BOUNDS: [f64; 2] = [0.5, 1.0];
        let mut histogram = Histogram::new(&BOUNDS);
        histogram.observe(0.25);
        histogram.observe(2.0);
        let mut exposition = Exposition::default();
        exposition.histograms(
            "time_seconds",
            "Times",
            vec![(vec![("path", "/".into())], histogram)],
        );
        let text = exposition.into_text();
        assert!(
            text.contains("time_seconds_bucket{path=\"/\",le=\"0.5\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("time_seconds_bucket{path=\"/\",le=\"1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("time_seconds_bucket{path=\"/\",le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("time_seconds_sum{path=\"/\"} 2.25\n"),
            "{text}"
        );
        assert!(
            text.contains("time_seconds_count{path=\"/\"} 2\n"),
            "{text}"
        );
    }
}
