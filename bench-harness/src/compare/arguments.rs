//! The command-line options side-by-side benchmarks share (`#[command(flatten)]` them into a
//! benchmark's own options): the servers (which coresearch and Meilisearch binaries, on which
//! loopback ports, with how many cores and which master key), the dataset (which file, how
//! much of it, which index) and the search workload (that dataset, how many queries, which
//! seed).
//!
//! Invariants: after `resolve`, at least one binary is given and every given binary is an
//! existing file named by an absolute path (the servers run in their own directories, where a
//! relative path would point elsewhere); each server works in its own directory, named after
//! it, inside the benchmark's work directory.

use std::path::{Path, PathBuf};

use clap::Args;

use super::server::{ServerKind, ServerSpec, server_binary};

/// The servers a benchmark compares.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct ServerArguments {
    /// The coresearch binary (omit to run Meilisearch alone)
    #[arg(long)]
    pub coresearch_bin: Option<PathBuf>,
    /// The Meilisearch binary (omit to run coresearch alone)
    #[arg(long)]
    pub meilisearch_bin: Option<PathBuf>,
    /// Cores for the servers: coresearch `--cores`, Meilisearch `--max-indexing-threads`
    #[arg(long)]
    pub cores: Option<usize>,
    /// The port coresearch listens on (loopback)
    #[arg(long, default_value_t = 7711)]
    pub coresearch_port: u16,
    /// The port Meilisearch listens on (loopback)
    #[arg(long, default_value_t = 7712)]
    pub meilisearch_port: u16,
    /// Master key given to both servers and used for every request
    #[arg(long)]
    pub master_key: Option<String>,
}

/// The dataset and the index of a benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct DatasetArguments {
    /// The zstd-compressed NDJSON dataset
    #[arg(long, default_value = "../shared/datasets/pypi-packages.ndjson.zst")]
    pub dataset: String,
    /// Read only the first N documents of the dataset (0: all)
    #[arg(long, default_value_t = 0)]
    pub documents: usize,
    /// The index created on both servers
    #[arg(long, default_value = "pypi")]
    pub index: String,
}

impl DatasetArguments {
    /// The dataset's first `--documents` lines (all of them for 0).
    pub fn read_lines(&self) -> Result<Vec<String>, String> {
        let limit = match self.documents {
            0 => usize::MAX,
            documents => documents,
        };
        eprintln!("reading {}", self.dataset);
        crate::measure::read_lines(&self.dataset, limit)
    }
}

/// The dataset, the index and the query mix of a search benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct MixArguments {
    #[command(flatten)]
    pub data: DatasetArguments,
    /// Queries in the mix
    #[arg(long, default_value_t = 2000)]
    pub queries: usize,
    /// Seed of the query mix and of the query choice during the load runs
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl MixArguments {
    /// The dataset's first `--documents` lines (all of them for 0).
    pub fn read_lines(&self) -> Result<Vec<String>, String> {
        self.data.read_lines()
    }
}

impl ServerArguments {
    /// Checks that a binary is given and makes every given one absolute.
    pub fn resolve(&mut self) -> Result<(), String> {
        if self.coresearch_bin.is_none() && self.meilisearch_bin.is_none() {
            return Err("give --coresearch-bin, --meilisearch-bin, or both".to_string());
        }
        for binary in [&mut self.coresearch_bin, &mut self.meilisearch_bin]
            .into_iter()
            .flatten()
        {
            *binary = server_binary(binary)?;
        }
        Ok(())
    }

    /// How to start server `kind` with its directory in `work_dir`; none when its binary was
    /// not given.
    pub fn spec(&self, kind: ServerKind, work_dir: &Path) -> Option<ServerSpec> {
        let (binary, port) = match kind {
            ServerKind::Coresearch => (&self.coresearch_bin, self.coresearch_port),
            ServerKind::Meilisearch => (&self.meilisearch_bin, self.meilisearch_port),
        };
        Some(ServerSpec::plain(
            kind,
            binary.as_deref()?,
            work_dir.join(kind.name()),
            port,
            self.cores,
            self.master_key.clone(),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn arguments() -> ServerArguments {
        ServerArguments {
            coresearch_bin: None,
            meilisearch_bin: Some(PathBuf::from("/bin/sh")),
            cores: Some(2),
            coresearch_port: 7711,
            meilisearch_port: 7712,
            master_key: None,
        }
    }

    #[test]
    fn only_given_servers_get_a_spec_in_their_own_directory() {
        let mut given = arguments();
        given.resolve().unwrap();
        assert!(
            given
                .spec(ServerKind::Coresearch, Path::new("/w"))
                .is_none()
        );
        let spec = given
            .spec(ServerKind::Meilisearch, Path::new("/w"))
            .unwrap();
        assert_eq!(spec.work_dir, Path::new("/w/meilisearch"));
        assert_eq!((spec.port, spec.cores), (7712, Some(2)));
        let mut none = ServerArguments {
            meilisearch_bin: None,
            ..arguments()
        };
        assert!(
            none.resolve()
                .unwrap_err()
                .contains("give --coresearch-bin")
        );
        let mut missing = ServerArguments {
            coresearch_bin: Some(PathBuf::from("/nonexistent/coresearch")),
            ..arguments()
        };
        assert!(missing.resolve().unwrap_err().contains("is not a file"));
    }
}
