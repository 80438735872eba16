//! Measurements and the markdown table they are printed as.
//!
//! Invariant: a child process prints one `RESULT` line per measurement; the parent parses
//! exactly those lines, so any other output of a child is ignored.

use std::collections::BTreeMap;

/// Prefix of a measurement line.
pub const RESULT_PREFIX: &str = "RESULT\t";

/// One measurement: row label, value, unit.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Order of the row in the table.
    pub order: u32,
    /// Row label.
    pub label: String,
    /// The number.
    pub value: f64,
    /// Unit, e.g. "ops/s" or "MiB".
    pub unit: String,
    /// Whether larger is better (throughput) or smaller (size, memory).
    pub larger_is_better: bool,
}

impl Measurement {
    /// Prints the measurement for the parent.
    pub fn emit(&self) {
        println!(
            "{RESULT_PREFIX}{}\t{}\t{}\t{}\t{}",
            self.order, self.label, self.value, self.unit, self.larger_is_better
        );
    }

    /// Parses a line printed by `emit`.
    pub fn parse(line: &str) -> Option<Measurement> {
        let mut fields = line.strip_prefix(RESULT_PREFIX)?.split('\t');
        Some(Measurement {
            order: fields.next()?.parse().ok()?,
            label: fields.next()?.to_string(),
            value: fields.next()?.parse().ok()?,
            unit: fields.next()?.to_string(),
            larger_is_better: fields.next()?.parse().ok()?,
        })
    }
}

fn format_value(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// One table row: unit, whether larger is better, value per engine.
type Row = (String, bool, BTreeMap<String, f64>);

/// The markdown table: one row per measurement, one column per engine, and the ratio of
/// ours to each other engine (> 1 means ours is better).
pub fn markdown(engines: &[String], results: &BTreeMap<String, Vec<Measurement>>) -> String {
    let mut rows: BTreeMap<(u32, String), Row> = BTreeMap::new();
    for (engine, measurements) in results {
        for measurement in measurements {
            let row = rows
                .entry((measurement.order, measurement.label.clone()))
                .or_insert_with(|| {
                    (
                        measurement.unit.clone(),
                        measurement.larger_is_better,
                        BTreeMap::new(),
                    )
                });
            row.2.insert(engine.clone(), measurement.value);
        }
    }
    let ours = engines.first().cloned().unwrap_or_default();
    let mut table = String::from("| measurement | unit |");
    for engine in engines {
        table.push_str(&format!(" {engine} |"));
    }
    for engine in engines.iter().skip(1) {
        table.push_str(&format!(" {ours} vs {engine} |"));
    }
    table.push_str("\n|---|---|");
    for _ in 0..(engines.len() * 2).saturating_sub(1) {
        table.push_str("---:|");
    }
    table.push('\n');
    for ((_, label), (unit, larger_is_better, values)) in rows {
        table.push_str(&format!("| {label} | {unit} |"));
        for engine in engines {
            match values.get(engine) {
                Some(value) => table.push_str(&format!(" {} |", format_value(*value))),
                None => table.push_str(" – |"),
            }
        }
        for engine in engines.iter().skip(1) {
            match (values.get(&ours), values.get(engine)) {
                (Some(mine), Some(theirs)) if *mine > 0.0 && *theirs > 0.0 => {
                    let ratio = if larger_is_better {
                        mine / theirs
                    } else {
                        theirs / mine
                    };
                    table.push_str(&format!(" {ratio:.2}× |"));
                }
                _ => table.push_str(" – |"),
            }
        }
        table.push('\n');
    }
    table
}
