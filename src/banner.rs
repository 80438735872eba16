//! What the server prints on standard error as it starts: its name, where it reads its
//! configuration and data, where it listens, and what it expects of API keys — the launch
//! summary a Meilisearch user knows, in coresearch's words.
//!
//! Invariant: every sentence names coresearch; Meilisearch is named only as the API it
//! speaks.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::{Config, Environment, MASTER_KEY_BYTES_MIN};
use crate::routes::root::API_VERSION;

/// The name, drawn in letters seven lines high.
const NAME_ART: &str = r"
                                                                 _
  ___   ___   _ __   ___  ___   ___   __ _  _ __   ___  | |__
 / __| / _ \ | '__| / _ \/ __| / _ \ / _` || '__| / __| | '_ \
| (__ | (_) || |   |  __/\__ \|  __/| (_| || |   | (__  | | | |
 \___| \___/ |_|    \___||___/ \___| \__,_||_|    \___| |_| |_|
";

/// The launch summary of a server started with `config` on `data_directory`.
pub fn launch_summary(config: &Config, data_directory: &Path) -> String {
    let protocol = if config.ssl_cert_path.is_some() && config.ssl_key_path.is_some() {
        "https"
    } else {
        "http"
    };
    let config_file = config
        .config_file_path
        .as_ref()
        .map_or_else(|| "none".to_owned(), |path| path.display().to_string());
    let environment = match config.env {
        Environment::Development => "development",
        Environment::Production => "production",
    };
    let mut summary = String::from(NAME_ART);
    // Writing to a `String` cannot fail.
    let _ = write!(
        summary,
        "\nConfig file path:\t{config_file:?}\n\
         Database path:\t\t{:?}\n\
         Server listening on:\t\"{protocol}://{}\"\n\
         Environment:\t\t{environment:?}\n\
         Package version:\t{:?}\n\
         Meilisearch API:\t{API_VERSION:?}\n\
         Cores:\t\t\t{}\n\
         Shards per index:\t{}\n\
         Anonymous telemetry:\t\"Disabled\"\n\n{}\n",
        data_directory.display().to_string(),
        config.http_addr,
        env!("CARGO_PKG_VERSION"),
        config.cores,
        shards_per_index(config),
        master_key_status(config),
    );
    summary
}

/// What the master key means for requests.
fn master_key_status(config: &Config) -> String {
    match &config.master_key {
        Some(key) if key.len() >= MASTER_KEY_BYTES_MIN || config.env == Environment::Production => {
            "A master key has been set. Requests to coresearch won't be authorized unless you \
             provide an authentication key."
                .to_owned()
        }
        Some(_) => "A master key has been set, but it is too short to be safe: see the warning \
                    below."
            .to_owned(),
        None => "No master key has been set: coresearch accepts every request. See the \
                 warning below."
            .to_owned(),
    }
}

/// The shards an index gets: all at once, or grown to as its documents come.
fn shards_per_index(config: &Config) -> String {
    if config.documents_per_shard == 0 || config.shards_per_index <= 1 {
        config.shards_per_index.to_string()
    } else {
        format!(
            "1, growing to {} (one per {} documents)",
            config.shards_per_index, config.documents_per_shard
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(arguments: &[&str]) -> Config {
        let mut all = vec!["coresearch"];
        all.extend_from_slice(arguments);
        let scratch = tempfile::tempdir().unwrap();
        Config::parse_from(all, &std::collections::HashMap::new(), scratch.path()).unwrap()
    }

    #[test]
    fn the_summary_names_coresearch_and_meilisearch_only_as_its_api() {
        let config = config(&["--master-key", "a-master-key-of-16-bytes-or-more"]);
        let summary = launch_summary(&config, Path::new("/data/data.ms"));
        assert!(
            summary.contains("Database path:\t\t\"/data/data.ms\""),
            "{summary}"
        );
        assert!(
            summary.contains("Requests to coresearch won't be authorized"),
            "{summary}"
        );
        assert!(
            summary.contains("Meilisearch API:\t\"1.41.0\""),
            "{summary}"
        );
        let without_api_line: String = summary
            .lines()
            .filter(|line| !line.starts_with("Meilisearch API:"))
            .collect();
        assert!(!without_api_line.contains("Meilisearch"), "{summary}");
    }

    #[test]
    fn a_missing_master_key_is_said() {
        let summary = launch_summary(&config(&[]), Path::new("data.ms"));
        assert!(summary.contains("No master key has been set"), "{summary}");
    }
}
