//! The embedding data set `scripts/minilm_embed.py` writes, read for the comparison:
//! `vectors.f32` and `queries.f32` (little-endian float32 rows) and `texts.ndjson`
//! (`{"set", "row", "id", "name", "summary"}` per row, `set` being `vectors` or `query`);
//! and what is sent from it: the documents and the search bodies.
//!
//! Invariants: document `row` is `{"id": row, "name", "summary", "bucket": row % BUCKETS,
//! "_vectors": {EMBEDDER: vector}}` with the vector's float32 values written in their
//! shortest exact decimal form, so a server parsing them gets back the very same floats;
//! the query bodies carry the same floats the exact answers were computed with.

use std::io::{BufRead, Read};
use std::path::Path;

use serde_json::{Value, json};

/// The embedder's name in the index settings and in the documents.
pub const EMBEDDER: &str = "minilm";
/// Distinct `bucket` values: `bucket = row % BUCKETS`.
pub const BUCKETS: usize = 100;
/// Hits asked for, and the `k` of recall@k.
pub const TOP_K: usize = 10;
/// Bytes of one stored value.
const VALUE_BYTES: usize = std::mem::size_of::<f32>();

/// The texts of one row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowText {
    /// The package name.
    pub name: String,
    /// The package summary (the embedded text).
    pub summary: String,
}

/// What the comparison reads of the data set.
#[derive(Debug, Clone)]
pub struct VectorData {
    /// Row length.
    pub dimensions: usize,
    /// Indexed vectors, row after row.
    pub vectors: Vec<f32>,
    /// Query vectors, row after row.
    pub queries: Vec<f32>,
    /// The texts of the indexed rows.
    pub documents: Vec<RowText>,
    /// The texts of the query rows.
    pub query_texts: Vec<RowText>,
}

impl VectorData {
    /// Reads the first `vectors` indexed rows and the first `queries` query rows of
    /// `directory`.
    pub fn load(
        directory: &Path,
        dimensions: usize,
        vectors: usize,
        queries: usize,
    ) -> Result<VectorData, String> {
        if dimensions == 0 {
            return Err("dimensions must be positive".into());
        }
        let vector_rows = read_rows(&directory.join("vectors.f32"), dimensions, vectors)?;
        let query_rows = read_rows(&directory.join("queries.f32"), dimensions, queries)?;
        let (documents, query_texts) =
            read_texts(&directory.join("texts.ndjson"), vectors, queries)?;
        Ok(VectorData {
            dimensions,
            vectors: vector_rows,
            queries: query_rows,
            documents,
            query_texts,
        })
    }

    /// Indexed rows.
    pub fn count(&self) -> usize {
        self.vectors.len() / self.dimensions
    }

    /// Query rows.
    pub fn query_count(&self) -> usize {
        self.queries.len() / self.dimensions
    }

    /// Indexed row `row`.
    pub fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[row * self.dimensions..(row + 1) * self.dimensions]
    }

    /// Query row `row`.
    pub fn query(&self, row: usize) -> &[f32] {
        &self.queries[row * self.dimensions..(row + 1) * self.dimensions]
    }

    /// Every document as one NDJSON line, in row order.
    pub fn document_lines(&self) -> Vec<String> {
        (0..self.count())
            .map(|row| {
                let text = &self.documents[row];
                json!({
                    "id": row,
                    "name": text.name,
                    "summary": text.summary,
                    "bucket": row % BUCKETS,
                    "_vectors": {EMBEDDER: self.vector(row)},
                })
                .to_string()
            })
            .collect()
    }
}

/// The index settings: the embedder (`dimensions` values a vector), `bucket` filterable,
/// `name` and `summary` searchable.
pub fn index_settings(binary_quantized: bool, dimensions: usize) -> Value {
    json!({
        "searchableAttributes": ["name", "summary"],
        "filterableAttributes": ["bucket"],
        "embedders": {
            EMBEDDER: {
                "source": "userProvided",
                "dimensions": dimensions,
                "binaryQuantized": binary_quantized,
            }
        },
    })
}

/// The kinds of search measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchKind {
    /// Vector only (`semanticRatio` 1).
    Semantic,
    /// Vector and the query's summary as `q`, `semanticRatio` 0.5.
    Hybrid,
    /// Vector only, `bucket = 7` (1 % of the rows).
    FilteredOnePercent,
    /// Vector only, `bucket < 10` (10 % of the rows).
    FilteredTenPercent,
}

impl SearchKind {
    /// The filter, when the kind has one.
    pub fn filter(self) -> Option<&'static str> {
        match self {
            SearchKind::FilteredOnePercent => Some("bucket = 7"),
            SearchKind::FilteredTenPercent => Some("bucket < 10"),
            SearchKind::Semantic | SearchKind::Hybrid => None,
        }
    }

    /// Whether row `row` matches the kind's filter.
    pub fn accepts(self, row: usize) -> bool {
        let bucket = row % BUCKETS;
        match self {
            SearchKind::FilteredOnePercent => bucket == 7,
            SearchKind::FilteredTenPercent => bucket < 10,
            SearchKind::Semantic | SearchKind::Hybrid => true,
        }
    }

    /// Its name in reports.
    pub fn label(self) -> &'static str {
        match self {
            SearchKind::Semantic => "semantic",
            SearchKind::Hybrid => "hybrid",
            SearchKind::FilteredOnePercent => "filtered 1 %",
            SearchKind::FilteredTenPercent => "filtered 10 %",
        }
    }
}

/// The search body of query `row` of `data` for `kind`.
pub fn search_body(data: &VectorData, row: usize, kind: SearchKind) -> Value {
    let semantic_ratio = if kind == SearchKind::Hybrid { 0.5 } else { 1.0 };
    let mut body = json!({
        "vector": data.query(row),
        "hybrid": {"embedder": EMBEDDER, "semanticRatio": semantic_ratio},
        "limit": TOP_K,
    });
    if kind == SearchKind::Hybrid {
        body["q"] = json!(data.query_texts[row].summary);
    }
    if let Some(filter) = kind.filter() {
        body["filter"] = json!(filter);
    }
    body
}

/// The first `rows` rows of the float32 file at `path`.
fn read_rows(path: &Path, dimensions: usize, rows: usize) -> Result<Vec<f32>, String> {
    let describe = |error: std::io::Error| format!("{}: {error}", path.display());
    let file = std::fs::File::open(path).map_err(describe)?;
    let bytes = file.metadata().map_err(describe)?.len();
    let row_bytes = (dimensions * VALUE_BYTES) as u64;
    if bytes % row_bytes != 0 {
        return Err(format!(
            "{}: {bytes} bytes is not a whole number of {dimensions}-dimension float32 rows",
            path.display()
        ));
    }
    let available = usize::try_from(bytes / row_bytes).map_err(|error| error.to_string())?;
    if rows > available {
        return Err(format!(
            "{}: {rows} rows asked, {available} stored",
            path.display()
        ));
    }
    let mut raw = Vec::with_capacity(rows * dimensions * VALUE_BYTES);
    file.take((rows * dimensions * VALUE_BYTES) as u64)
        .read_to_end(&mut raw)
        .map_err(describe)?;
    Ok(raw
        .chunks_exact(VALUE_BYTES)
        .map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        .collect())
}

/// The texts of the first `vectors` indexed rows and the first `queries` query rows.
fn read_texts(
    path: &Path,
    vectors: usize,
    queries: usize,
) -> Result<(Vec<RowText>, Vec<RowText>), String> {
    let describe = |error: std::io::Error| format!("{}: {error}", path.display());
    let file = std::fs::File::open(path).map_err(describe)?;
    let mut documents: Vec<Option<RowText>> = vec![None; vectors];
    let mut query_texts: Vec<Option<RowText>> = vec![None; queries];
    for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(describe)?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(&line)
            .map_err(|error| format!("{} line {}: {error}", path.display(), number + 1))?;
        let row = value["row"]
            .as_u64()
            .and_then(|row| usize::try_from(row).ok())
            .ok_or_else(|| format!("{} line {}: no `row`", path.display(), number + 1))?;
        let slots = match value["set"].as_str() {
            Some("vectors") => &mut documents,
            Some("query" | "queries") => &mut query_texts,
            _ => continue,
        };
        if let Some(slot) = slots.get_mut(row) {
            *slot = Some(RowText {
                name: value["name"].as_str().unwrap_or_default().to_string(),
                summary: value["summary"].as_str().unwrap_or_default().to_string(),
            });
        }
    }
    let complete = |slots: Vec<Option<RowText>>, set: &str| {
        let missing = slots.iter().filter(|slot| slot.is_none()).count();
        if missing > 0 {
            return Err(format!(
                "{}: {missing} rows of set `{set}` have no text",
                path.display()
            ));
        }
        Ok(slots.into_iter().flatten().collect::<Vec<_>>())
    };
    Ok((
        complete(documents, "vectors")?,
        complete(query_texts, "query")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_select_the_rows_their_bucket_says() {
        let one: Vec<usize> = (0..300)
            .filter(|row| SearchKind::FilteredOnePercent.accepts(*row))
            .collect();
        assert_eq!(one, [7, 107, 207]);
        let ten = (0..1000)
            .filter(|row| SearchKind::FilteredTenPercent.accepts(*row))
            .count();
        assert_eq!(ten, 100);
        assert!((0..10).all(|row| SearchKind::Semantic.accepts(row)));
    }

    #[test]
    fn floats_survive_the_json_round_trip() {
        let values = [0.1f32, -0.033_333_33, 1.0e-8, 0.707_106_77];
        let text = json!(values).to_string();
        let back: Vec<f32> = serde_json::from_str(&text).expect("the JSON reads back");
        assert_eq!(back, values);
    }
}
