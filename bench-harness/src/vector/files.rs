//! Data sets read from a directory of raw files (`--dataset files:DIR`), such as the real text
//! embeddings `scripts/minilm_embed.py` writes: `vectors.f32` (indexed), `queries.f32`
//! (held out) and `extra.f32` (merged into the built graph), each little-endian float32 rows,
//! row after row. The row length is `--dimensions N` or else the `dimensions` field of the
//! directory's `source.json`. The first `--vectors N` rows are indexed (all of them when not
//! given), the first `--queries N` queries asked, and the first 1 % of the indexed count of
//! `extra.f32` merged, as with the synthetic data sets.

use super::dataset::Dataset;
use std::io::Read;
use std::path::Path;

/// Prefix of the `--dataset` value that names a directory.
pub const PREFIX: &str = "files:";

/// Bytes of one stored value.
const VALUE_BYTES: usize = std::mem::size_of::<f32>();

/// Indexed vectors per extra vector merged afterwards (the synthetic sets' 1 %).
const EXTRA_DIVISOR: usize = 100;

/// What to read from the directory.
pub struct Request<'a> {
    /// The directory.
    pub directory: &'a Path,
    /// Indexed vectors (all of `vectors.f32` when `None`).
    pub vectors: Option<usize>,
    /// Queries.
    pub queries: usize,
    /// Row length (from `source.json` when `None`).
    pub dimensions: Option<usize>,
}

/// Loads the data set `request` describes; named after the directory.
pub fn load(request: &Request) -> Result<Dataset, String> {
    let directory = request.directory;
    let dimensions = match request.dimensions {
        Some(dimensions) => dimensions,
        None => source_dimensions(directory)?,
    };
    if dimensions == 0 {
        return Err("dimensions must be positive".into());
    }
    let vectors = read_rows(&directory.join("vectors.f32"), dimensions, request.vectors)?;
    let count = vectors.len() / dimensions;
    let queries = read_rows(
        &directory.join("queries.f32"),
        dimensions,
        Some(request.queries),
    )?;
    let extra = read_rows(
        &directory.join("extra.f32"),
        dimensions,
        Some(count / EXTRA_DIVISOR),
    )?;
    let name = directory.file_name().map_or_else(
        || "files".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    Ok(Dataset {
        name,
        dimensions,
        vectors,
        queries,
        extra,
    })
}

/// The `dimensions` field of `source.json` in `directory`.
fn source_dimensions(directory: &Path) -> Result<usize, String> {
    let path = directory.join("source.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|error| format!("{}: {error} (or give --dimensions)", path.display()))?;
    let source: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    source["dimensions"]
        .as_u64()
        .and_then(|dimensions| usize::try_from(dimensions).ok())
        .ok_or_else(|| format!("{}: no whole `dimensions` field", path.display()))
}

/// The first `rows` rows (all when `None`) of the float32 file at `path`.
fn read_rows(path: &Path, dimensions: usize, rows: Option<usize>) -> Result<Vec<f32>, String> {
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
    let wanted = rows.unwrap_or(available);
    if wanted > available {
        return Err(format!(
            "{}: {wanted} rows asked, {available} stored",
            path.display()
        ));
    }
    let mut raw = Vec::with_capacity(wanted * dimensions * VALUE_BYTES);
    file.take((wanted * dimensions * VALUE_BYTES) as u64)
        .read_to_end(&mut raw)
        .map_err(describe)?;
    Ok(raw
        .chunks_exact(VALUE_BYTES)
        .map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("vector-files-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&directory).expect("the fixture directory is created");
        directory
    }

    fn write(directory: &Path, file: &str, values: impl Iterator<Item = f32>) {
        let bytes: Vec<u8> = values.flat_map(f32::to_le_bytes).collect();
        std::fs::write(directory.join(file), bytes).expect("a fixture file is written");
    }

    fn load_error(request: &Request) -> String {
        match load(request) {
            Ok(_) => panic!("{} loaded", request.directory.display()),
            Err(error) => error,
        }
    }

    /// 300 vectors, 5 queries and 4 extra rows of 3 dimensions; value = file tag + index.
    fn fixture(name: &str) -> PathBuf {
        let directory = scratch(name);
        write(
            &directory,
            "vectors.f32",
            (0..900).map(|value| value as f32),
        );
        write(
            &directory,
            "queries.f32",
            (0..15).map(|value| 1e4 + value as f32),
        );
        write(
            &directory,
            "extra.f32",
            (0..12).map(|value| 2e4 + value as f32),
        );
        std::fs::write(directory.join("source.json"), r#"{"dimensions": 3}"#)
            .expect("source.json is written");
        directory
    }

    #[test]
    fn reads_prefixes_with_dimensions_from_source_json() {
        let directory = fixture("prefix");
        let request = Request {
            directory: &directory,
            vectors: Some(200),
            queries: 2,
            dimensions: None,
        };
        let dataset = load(&request).expect("the fixture loads");
        assert_eq!(dataset.dimensions, 3);
        assert_eq!(dataset.count(), 200);
        assert_eq!(dataset.vector(199), &[597.0, 598.0, 599.0]);
        assert_eq!(dataset.query_count(), 2);
        assert_eq!(dataset.query(1), &[1e4 + 3.0, 1e4 + 4.0, 1e4 + 5.0]);
        assert_eq!(
            dataset.extra,
            vec![2e4, 2e4 + 1.0, 2e4 + 2.0, 2e4 + 3.0, 2e4 + 4.0, 2e4 + 5.0]
        );
        assert!(dataset.name.starts_with("vector-files-prefix"));
        std::fs::remove_dir_all(&directory).expect("the fixture directory is removed");
    }

    #[test]
    fn reads_every_vector_by_default() {
        let directory = fixture("all");
        let request = Request {
            directory: &directory,
            vectors: None,
            queries: 5,
            dimensions: Some(3),
        };
        let dataset = load(&request).expect("the fixture loads");
        assert_eq!(dataset.count(), 300);
        assert_eq!(dataset.extra.len(), 3 * 3);
        std::fs::remove_dir_all(&directory).expect("the fixture directory is removed");
    }

    #[test]
    fn refuses_short_files_and_wrong_dimensions() {
        let directory = fixture("errors");
        let too_many = Request {
            directory: &directory,
            vectors: Some(301),
            queries: 1,
            dimensions: None,
        };
        assert!(load_error(&too_many).contains("301 rows asked, 300 stored"));
        let wrong = Request {
            directory: &directory,
            vectors: None,
            queries: 1,
            dimensions: Some(7),
        };
        assert!(load_error(&wrong).contains("not a whole number"));
        std::fs::remove_dir_all(&directory).expect("the fixture directory is removed");
    }
}
