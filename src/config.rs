//! The one place that reads command-line flags, environment variables and the configuration
//! file (ARCHITECTURE.md §10 rule 9). Everything else receives a [`Config`] and its typed fields.
//!
//! Every Meilisearch v1.41 option is accepted with the same flag, the same `MEILI_*`
//! variable, the same default and the same parsing, plus coresearch's own `--cores`,
//! `--shards-per-index`, `--idle-poll-micros` and `VECTORSTORE_READER_PREFETCH_MEMORY`.
//!
//! Invariants:
//! - precedence is command line > environment > configuration file > default;
//! - [`Config::parse_from`] never reads or writes the process environment: the variables it
//!   sees are the map it is given ([`Config::from_args_and_env`] collects the real ones);
//! - every relative path in a [`Config`] has been resolved against the working directory;
//! - a production [`Config`] always carries a master key of at least
//!   [`MASTER_KEY_BYTES_MIN`] bytes.
//!
//! How the layers meet: clap reads the command line; environment variables (and the values
//! of the configuration file, exported as the variables they stand for when those are not
//! already set, as Meilisearch does) are turned into extra `--flag=value` arguments for every
//! option the command line did not name, so clap applies one set of parsing, `requires` and
//! `conflicts_with` rules to all of them.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::{ArgGroup, CommandFactory, FromArgMatches, Parser, ValueEnum};

pub use crate::auth::rate_limit::setting::{
    BURST_MAX, REQUESTS_PER_SECOND_MAX, REQUESTS_PER_SECOND_MIN,
};
use crate::auth::rate_limit::{Burst, RateLimit, RateLimits, RequestsPerSecond};

/// The shortest master key a production instance accepts.
pub const MASTER_KEY_BYTES_MIN: usize = 16;
/// Random bytes in a master key we suggest (base64 encoded, 43 characters).
const GENERATED_MASTER_KEY_BYTES: usize = 32;
/// The snapshot interval of a bare `--schedule-snapshot` (one day).
pub const SNAPSHOT_INTERVAL_DEFAULT_SECONDS: u64 = 86_400;
const SNAPSHOT_INTERVAL_DEFAULT: &str = "86400";
/// The most cores `--cores` accepts.
pub const CORES_MAX: u64 = 4096;
/// The default of `--idle-poll-micros` (see `runtime::executors::idle_poll`).
pub const IDLE_POLL_MICROS_DEFAULT: u64 = 50;
/// The most `--idle-poll-micros` accepts.
pub use crate::runtime::executors::IDLE_POLL_MICROS_MAX;
/// The most cores of a server whose new indexes get one shard when `--shards-per-index` is
/// not given (see [`default_shards_per_index`]).
pub const SINGLE_SHARD_CORES_MAX: usize = 2;

/// Shards of a new index when `--shards-per-index` is not given: one on a server of up to
/// [`SINGLE_SHARD_CORES_MAX`] cores, one per core above.
///
/// Why: every shard a search reads costs it a fixed share of work whatever the shard's size
/// (its terms' postings looked up and decoded per field and position bucket, its buckets
/// ranked until it has its own `offset + limit` hits), and a search of an index of one shard
/// runs on whichever core its connection is on (`crate::coordinator`), so one shard keeps
/// every core searching without that cost. Measured on two cores with 520k PyPI documents
/// (`tuning/results/single-shard-2026-11-27.md`): one shard against two, 0.72× the CPU per
/// search, 1.34–1.42× the searches per second at 16 connections and as many at one
/// connection; indexing 47.7k documents/s against 64.8k, still over 3× Meilisearch's. With
/// more cores one shard's single indexing thread falls further behind, and that trade is not
/// measured yet, so larger servers keep a shard per core.
pub fn default_shards_per_index(cores: usize) -> usize {
    if cores <= SINGLE_SHARD_CORES_MAX {
        1
    } else {
        cores
    }
}

/// The default of `--store-idle-seconds`: fifteen minutes, so an index searched every few
/// minutes stays open and a tenant gone for the day gives its memory back.
pub const STORE_IDLE_SECONDS_DEFAULT: u64 = 900;
/// The most `--store-idle-seconds` accepts (a year).
pub const STORE_IDLE_SECONDS_MAX: u64 = 365 * 24 * 3600;
/// The most `--shutdown-drain-delay-seconds` accepts: a balancer notices a failing health
/// check within seconds, and a service manager's stop timeout is 90 s by default.
pub const SHUTDOWN_DRAIN_DELAY_SECONDS_MAX: u64 = 300;
/// The default of `--documents-per-shard` (see `crate::tasks::shard_growth`).
pub const DOCUMENTS_PER_SHARD_DEFAULT: u64 = 100_000;
/// The most `--documents-per-shard` accepts.
pub const DOCUMENTS_PER_SHARD_MAX: u64 = 1 << 40;
/// The most `--max-open-stores` accepts.
pub const OPEN_STORES_MAX: u64 = 1 << 24;
/// The default of `--indexing-cpu-share` and its largest value, in percent (see
/// `runtime::indexing_share` for why).
pub use crate::runtime::indexing_share::{
    INDEXING_SHARE_DEFAULT_PERCENT as INDEXING_CPU_SHARE_DEFAULT,
    INDEXING_SHARE_MAX_PERCENT as INDEXING_CPU_SHARE_MAX,
};
/// The default of `--indexing-scheduler-slice-micros` (see `runtime::indexing_priority`).
pub const INDEXING_SCHEDULER_SLICE_MICROS_DEFAULT: u64 = 100;
/// The largest slice the kernel takes, in microseconds (100 ms).
pub const INDEXING_SCHEDULER_SLICE_MICROS_MAX: u64 = 100_000;
/// The default of `--write-visibility-target-seconds`: a write that has waited half a minute
/// stops giving way to searches. At the default share, the 100,000-document payloads of
/// `search_under_writes` under a full search load waited up to 45 s before it, against 13.5 s
/// at the even split (`tuning/results/fair-share-2026-11-28.md`); half a minute lets a search
/// peak keep its latency through ordinary writes and bounds how long a large one hides.
pub const WRITE_VISIBILITY_TARGET_SECONDS_DEFAULT: u64 = 30;
/// The largest `--write-visibility-target-seconds`: a day.
pub const WRITE_VISIBILITY_TARGET_SECONDS_MAX: u64 = 86_400;
/// The default of `--max-cache-memory` is the machine's memory divided by this: the commit
/// caches of every open shard together (see `shards::cache_meter`) keep to a quarter, which
/// leaves the rest to the indexing memory, the page cache and the mappings.
pub const CACHE_MEMORY_SHARE_DIVISOR: u64 = 4;
/// The default of `--max-cache-memory` when the machine's memory is unknown.
pub const CACHE_MEMORY_FALLBACK_BYTES: u64 = 1 << 30;

/// The most shards `--shards-per-index` accepts.
pub const SHARDS_PER_INDEX_MAX: u64 = 4096;
/// The default S3 multipart part size (375 MiB).
pub const S3_MULTIPART_PART_BYTES_DEFAULT: u64 = 375 * 1024 * 1024;
/// Meilisearch's default `--http-payload-size-limit`, `100 MB` (decimal megabytes).
pub const HTTP_PAYLOAD_BYTES_DEFAULT: u64 = 100_000_000;
/// The rerank endpoint Meilisearch 1.41 calls for personalized search (Cohere's v1 API).
pub const PERSONALIZATION_URL_DEFAULT: &str = "https://api.cohere.ai/v1/rerank";
/// The schemes `--experimental-personalization-url` accepts.
const PERSONALIZATION_URL_SCHEMES: [&str; 2] = ["http", "https"];

const CONFIG_FILE_PATH_DEFAULT: &str = "./config.toml";

/// Dynamic search rules' fuel by default (Meilisearch 1.50's): distinct query words counted,
/// applying rules that may pin, pins of one search, and rule words looked up in one search.
pub const DSR_FUEL_MAX_COUNTED_WORDS_DEFAULT: u8 = 10;
pub const DSR_FUEL_MAX_ACTIVE_RULES_DEFAULT: u32 = 1_000;
pub const DSR_FUEL_MAX_PIN_ACTIONS_DEFAULT: u32 = 100;
pub const DSR_FUEL_WORD_FUEL_DEFAULT: u32 = 4_096;

/// The limits on the work dynamic search rules add to one search (what each bounds: see
/// `crate::search::rule_fuel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleFuel {
    pub max_counted_words: u8,
    pub max_active_rules: u32,
    pub max_pin_actions: u32,
    pub word_fuel: u32,
}

impl Default for RuleFuel {
    fn default() -> Self {
        RuleFuel {
            max_counted_words: DSR_FUEL_MAX_COUNTED_WORDS_DEFAULT,
            max_active_rules: DSR_FUEL_MAX_ACTIVE_RULES_DEFAULT,
            max_pin_actions: DSR_FUEL_MAX_PIN_ACTIONS_DEFAULT,
            word_fuel: DSR_FUEL_WORD_FUEL_DEFAULT,
        }
    }
}
const CONFIG_FILE_PATH_VARIABLE: &str = "MEILI_CONFIG_FILE_PATH";
const CONFIG_FILE_PATH_FLAG: &str = "config-file-path";
const CONFIG_FILE_PATH_KEY: &str = "config_file_path";
/// The key of `/proc/meminfo` that gives the machine's total memory, in KiB.
const MEMINFO_TOTAL_KEY: &str = "MemTotal:";
const MEMINFO_PATH: &str = "/proc/meminfo";
const KIBIBYTE_BYTES: u64 = 1024;

/// `development` or `production`, as `--env` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
pub enum Environment {
    Development,
    Production,
}

/// The kernel scheduling policy of the threads that index, from `--indexing-scheduler-policy`
/// (see `runtime::indexing_priority::SchedulingPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
pub enum IndexingSchedulerPolicy {
    Normal,
    Batch,
}

impl IndexingSchedulerPolicy {
    /// The runtime's name for it.
    pub fn policy(self) -> crate::runtime::indexing_priority::SchedulingPolicy {
        match self {
            IndexingSchedulerPolicy::Normal => {
                crate::runtime::indexing_priority::SchedulingPolicy::Normal
            }
            IndexingSchedulerPolicy::Batch => {
                crate::runtime::indexing_priority::SchedulingPolicy::Batch
            }
        }
    }
}

/// How the threads that index share the CPUs with searches and with the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexingScheduling {
    /// Percent of a CPU kept busy by searches that the threads that index still get
    /// (`--indexing-cpu-share`, default [`INDEXING_CPU_SHARE_DEFAULT`]).
    pub cpu_share: u8,
    /// The scheduler slice the threads that index ask for
    /// (`--indexing-scheduler-slice-micros`; `None` for 0: the kernel's default slice).
    pub scheduler_slice: Option<std::time::Duration>,
    /// The kernel scheduling policy of the threads that index (`--indexing-scheduler-policy`,
    /// default `batch`).
    pub scheduler_policy: IndexingSchedulerPolicy,
    /// How long a write may wait before indexing stops giving way to searches
    /// (`--write-visibility-target-seconds`, default
    /// [`WRITE_VISIBILITY_TARGET_SECONDS_DEFAULT`]; `None` for 0: never).
    pub write_visibility_target: Option<std::time::Duration>,
}

impl IndexingScheduling {
    fn from_cli(cli: &Cli) -> IndexingScheduling {
        IndexingScheduling {
            cpu_share: cli.indexing_cpu_share,
            scheduler_slice: scheduler_slice(cli.indexing_scheduler_slice_micros),
            scheduler_policy: cli.indexing_scheduler_policy,
            write_visibility_target: (cli.write_visibility_target_seconds > 0)
                .then(|| std::time::Duration::from_secs(cli.write_visibility_target_seconds)),
        }
    }
}

/// How verbose the logs are, from `--log-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// The upper-case name, as `--log-level` accepts and `--help` shows it.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Off => "OFF",
            LogLevel::Error => "ERROR",
            LogLevel::Warn => "WARN",
            LogLevel::Info => "INFO",
            LogLevel::Debug => "DEBUG",
            LogLevel::Trace => "TRACE",
        }
    }
}

impl FromStr for LogLevel {
    type Err = String;

    /// Case-insensitive; surrounding white space is ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(LogLevel::Off),
            "error" => Ok(LogLevel::Error),
            "warn" => Ok(LogLevel::Warn),
            "info" => Ok(LogLevel::Info),
            "debug" => Ok(LogLevel::Debug),
            "trace" => Ok(LogLevel::Trace),
            _ => Err(format!(
                "log level `{text}` is not one of OFF, ERROR, WARN, INFO, DEBUG, TRACE"
            )),
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// The format of the logs written to stderr, from `--experimental-logs-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogMode {
    Human,
    Json,
}

impl FromStr for LogMode {
    type Err = String;

    /// Case-insensitive; surrounding white space is ignored.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "human" => Ok(LogMode::Human),
            "json" => Ok(LogMode::Json),
            _ => Err(format!("log mode `{text}` is not one of HUMAN, JSON")),
        }
    }
}

/// The S3 snapshot options, present only when S3 snapshots are configured (then the bucket
/// URL, region, name, prefix and one authentication method are all given).
#[derive(Clone, PartialEq, Eq)]
pub struct S3SnapshotConfig {
    pub bucket_url: String,
    pub bucket_region: String,
    pub bucket_name: String,
    pub snapshot_prefix: String,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub role_arn: Option<String>,
    pub web_identity_token_file: Option<PathBuf>,
    pub max_in_flight_parts: NonZeroUsize,
    pub compression_level: u32,
    pub signature_duration_seconds: u64,
    pub multipart_part_bytes: u64,
}

impl fmt::Debug for S3SnapshotConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("S3SnapshotConfig")
            .field("bucket_url", &self.bucket_url)
            .field("bucket_region", &self.bucket_region)
            .field("bucket_name", &self.bucket_name)
            .field("snapshot_prefix", &self.snapshot_prefix)
            .field("access_key", &redacted(&self.access_key))
            .field("secret_key", &redacted(&self.secret_key))
            .field("role_arn", &self.role_arn)
            .field("web_identity_token_file", &self.web_identity_token_file)
            .field("max_in_flight_parts", &self.max_in_flight_parts)
            .field("compression_level", &self.compression_level)
            .field(
                "signature_duration_seconds",
                &self.signature_duration_seconds,
            )
            .field("multipart_part_bytes", &self.multipart_part_bytes)
            .finish()
    }
}

/// The variable a dump import sets for the child process that indexes the dump: the data
/// directory to process. Not a `MEILI_`/`CORESEARCH_` option: users never set it. A child
/// runs, because the cores of a run keep their files open until the process ends, and the
/// server must open the imported files again.
pub const DUMP_IMPORT_CHILD_VARIABLE: &str = "_CORESEARCH_DUMP_IMPORT_DATA_DIRECTORY";

/// The server's whole configuration. Options whose feature has not landed yet are accepted
/// and stored; their doc says which feature they wait for.
#[derive(Clone, PartialEq)]
pub struct Config {
    /// Where the data directory lives (`--db-path`, default `./data.ms`).
    pub db_path: PathBuf,
    /// The address and port to listen on (`--http-addr`, default `localhost:7700`).
    pub http_addr: String,
    /// The master key (`--master-key`); `None` leaves the instance unprotected.
    pub master_key: Option<String>,
    /// `--env`, default development.
    pub env: Environment,
    /// The read-only webhook (nil uuid) told about every finished batch.
    pub task_webhook_url: Option<url::Url>,
    /// The `Authorization` header sent to the `task_webhook_url` webhook.
    pub task_webhook_authorization_header: Option<String>,
    /// Accepted; coresearch sends no telemetry either way.
    pub no_analytics: bool,
    /// The largest request body accepted, in bytes (default 100 MB).
    pub http_payload_size_limit: u64,
    /// TLS certificate chain (PEM); TLS is on when this and the key are both given.
    pub ssl_cert_path: Option<PathBuf>,
    /// TLS private key (PEM).
    pub ssl_key_path: Option<PathBuf>,
    /// Certificates of the authorities trusted for client authentication.
    pub ssl_auth_path: Option<PathBuf>,
    /// A DER-encoded OCSP response stapled to the certificate.
    pub ssl_ocsp_path: Option<PathBuf>,
    /// Refuse clients without a certificate (with `ssl_auth_path`).
    pub ssl_require_auth: bool,
    /// TLS session resumption.
    pub ssl_resumption: bool,
    /// TLS session tickets.
    pub ssl_tickets: bool,
    /// A snapshot to import at start into an empty `--db-path` (`crate::backups`).
    pub import_snapshot: Option<PathBuf>,
    /// Start on an empty database when the `--import-snapshot` file is missing.
    pub ignore_missing_snapshot: bool,
    /// Start on the existing database instead of importing `--import-snapshot`.
    pub ignore_snapshot_if_db_exists: bool,
    /// Where `POST /snapshots` writes snapshots (default `snapshots/`).
    pub snapshot_dir: PathBuf,
    /// Seconds between scheduled snapshots (`--schedule-snapshot`); `None` when disabled.
    pub schedule_snapshot: Option<u64>,
    /// A dump to import at start into an empty `--db-path` (`crate::backups`).
    pub import_dump: Option<PathBuf>,
    /// Start on an empty database when the `--import-dump` file is missing.
    pub ignore_missing_dump: bool,
    /// Start on the existing database instead of importing `--import-dump`.
    pub ignore_dump_if_db_exists: bool,
    /// Where `POST /dumps` writes dumps (default `dumps/`).
    pub dump_dir: PathBuf,
    /// Set in the child process a dump import starts to index the dump: the staging data
    /// directory it processes until its queue is idle ([`DUMP_IMPORT_CHILD_VARIABLE`]).
    pub dump_import_child: Option<PathBuf>,
    /// `--log-level`, default INFO.
    pub log_level: LogLevel,
    /// Memory bound of indexing, in bytes; default two thirds of the machine's memory,
    /// `None` when the machine's memory is unknown. A quarter of it, shared by the cores,
    /// bounds the changed pages the shards' write transactions keep in memory, and half of it
    /// the batches' pending word and facet changes (see `coordinator::shard_host::ShardMemory`).
    pub max_indexing_memory: Option<u64>,
    /// Accepted; coresearch indexes on its shard cores (`--cores`), so no separate pool.
    pub max_indexing_threads: Option<usize>,
    /// Forces the `containsFilter` runtime feature on.
    pub experimental_contains_filter: bool,
    /// Forces the `metrics` runtime feature on (`GET /metrics`).
    pub experimental_enable_metrics: bool,
    /// Forces the `logsRoute` runtime feature on (`/logs/*`).
    pub experimental_enable_logs_route: bool,
    /// `HUMAN` or `JSON` logs on stderr.
    pub experimental_logs_mode: LogMode,
    /// Searches waiting before 503 (default 1000), shared out between the cores (see
    /// [`crate::search::queue`]).
    pub experimental_search_queue_size: usize,
    /// Seconds after which a waiting search is refused instead of run (default 60).
    pub experimental_drop_search_after: NonZeroUsize,
    /// Searches one core runs at once (default 4).
    pub experimental_nb_searches_per_core: NonZeroUsize,
    /// Accepted with nothing to do: a data directory of this format opens as it is (there is
    /// no older coresearch format to upgrade from; Meilisearch databases come in by dumps).
    pub experimental_dumpless_upgrade: bool,
    /// Accepted; takes effect when the `TaskId`/`DryRun` headers land.
    pub experimental_replication_parameters: bool,
    /// Accepted; coresearch bounds its indexing memory by `max_indexing_memory` either way.
    pub experimental_reduce_indexing_memory_usage: bool,
    /// Most tasks in one batch (default unlimited).
    pub experimental_max_number_of_batched_tasks: usize,
    /// Most total payload bytes in one batch; `None` = half of indexing memory, at most
    /// 10 GiB.
    pub experimental_limit_batched_tasks_total_size: Option<u64>,
    /// Entries of the query-embedding cache per embedder and core (default 0: no cache; see
    /// `crate::embedders::query_cache`).
    pub experimental_embedding_cache_entries: usize,
    /// Snapshots copy the shards' page stores as they are instead of compacting them.
    pub experimental_no_snapshot_compaction: bool,
    /// The dynamic search rules' limits (`--experimental-dsr-fuel-*`, Meilisearch's fuel).
    pub experimental_dsr_fuel: RuleFuel,
    /// Accepted for compatibility: it chooses between Meilisearch's two indexers for
    /// settings changes, and coresearch has one, so settings apply the same either way.
    pub experimental_no_edition_2024_for_settings: bool,
    /// Accepted for compatibility: it chooses between Meilisearch's two indexers, and
    /// coresearch has one, so a dump import is the same either way.
    pub experimental_no_edition_2024_for_dumps: bool,
    /// The key of the rerank service personalized search calls; personalization is on when
    /// it is given and not blank (see `crate::personalization`).
    pub experimental_personalization_api_key: Option<String>,
    /// The rerank endpoint personalized search calls (coresearch's own option; Meilisearch
    /// 1.41 always calls [`PERSONALIZATION_URL_DEFAULT`]).
    pub experimental_personalization_url: url::Url,
    /// Networks that outgoing requests may reach besides global addresses (or `any`).
    pub experimental_allowed_ip_networks: Vec<cidr::AnyIpCidr>,
    /// The S3 snapshot options as given: coresearch does not upload snapshots, so a start
    /// with them is refused ([`Config::check_s3_snapshots`]).
    pub s3_snapshots: Option<S3SnapshotConfig>,
    /// The configuration file that was read, if any.
    pub config_file_path: Option<PathBuf>,
    /// Executors, one pinned per core (`--cores`, default all available cores).
    pub cores: usize,
    /// The most shards of an index, which a new index grows to (`--shards-per-index`, default
    /// [`default_shards_per_index`]).
    pub shards_per_index: usize,
    /// How long a core out of work polls before it sleeps (`--idle-poll-micros`, default
    /// [`IDLE_POLL_MICROS_DEFAULT`]; see `runtime::executors::idle_poll`).
    pub idle_poll: std::time::Duration,
    /// Load each vector graph into memory when its shard opens
    /// (`VECTORSTORE_READER_PREFETCH_MEMORY`, default false): node pages, record ids and
    /// navigation vectors are read into memory once, at open.
    pub vectorstore_reader_prefetch_memory: bool,
    /// Shards kept open at most before the least recently used are closed
    /// (`--max-open-stores`; `None`: what the machine's descriptor and mapping limits allow,
    /// see `host::registry`).
    pub max_open_stores: Option<usize>,
    /// A shard nobody used for this long is closed (`--store-idle-seconds`, default
    /// [`STORE_IDLE_SECONDS_DEFAULT`]).
    pub store_idle: std::time::Duration,
    /// How long the cores keep serving once SIGTERM or SIGINT arrived, while `GET /health`
    /// answers 503 `draining`, before they stop accepting (`--shutdown-drain-delay-seconds`,
    /// default 0).
    pub shutdown_drain_delay: std::time::Duration,
    /// Bytes the commit caches of every open shard may hold together
    /// (`--max-cache-memory`, default the machine's memory over
    /// [`CACHE_MEMORY_SHARE_DIVISOR`]).
    pub max_cache_memory: u64,
    /// How the threads that index share the CPUs with searches.
    pub indexing_scheduling: IndexingScheduling,
    /// Documents per shard before an index grows to more shards, up to `shards_per_index`
    /// (`--documents-per-shard`, default
    /// [`DOCUMENTS_PER_SHARD_DEFAULT`]; 0: a new index gets
    /// `shards_per_index` at once).
    pub documents_per_shard: u64,
    /// The rate limits of API keys and tenant tokens (`--rate-limit-*`, off by default; see
    /// `crate::auth::rate_limit`).
    pub rate_limits: RateLimits,
    /// Where and how traces are exported (`--experimental-otlp-traces-*`); `None`, the
    /// default, leaves tracing off (see `crate::traces`).
    pub otlp_traces: Option<crate::traces::ExportSettings>,
}

/// `value` as a `usize`, the largest one when it does not fit.
fn saturating_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

fn redacted(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| "<redacted>")
}

impl fmt::Debug for Config {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = formatter.debug_struct("Config");
        self.debug_server_fields(&mut debug);
        self.debug_tls_fields(&mut debug);
        self.debug_snapshot_and_dump_fields(&mut debug);
        self.debug_logging_and_indexing_fields(&mut debug);
        self.debug_experimental_search_fields(&mut debug);
        self.debug_experimental_indexing_fields(&mut debug);
        self.debug_deployment_fields(&mut debug);
        debug.finish()
    }
}

/// The groups of fields `Config`'s `Debug` prints, in declaration order, secrets redacted.
/// The test `debug_output_names_every_field` fails when a field is missing from them.
impl Config {
    fn debug_server_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field("db_path", &self.db_path)
            .field("http_addr", &self.http_addr)
            .field("master_key", &redacted(&self.master_key))
            .field("env", &self.env)
            .field("task_webhook_url", &self.task_webhook_url)
            .field(
                "task_webhook_authorization_header",
                &redacted(&self.task_webhook_authorization_header),
            )
            .field("no_analytics", &self.no_analytics)
            .field("http_payload_size_limit", &self.http_payload_size_limit);
    }

    fn debug_tls_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field("ssl_cert_path", &self.ssl_cert_path)
            .field("ssl_key_path", &self.ssl_key_path)
            .field("ssl_auth_path", &self.ssl_auth_path)
            .field("ssl_ocsp_path", &self.ssl_ocsp_path)
            .field("ssl_require_auth", &self.ssl_require_auth)
            .field("ssl_resumption", &self.ssl_resumption)
            .field("ssl_tickets", &self.ssl_tickets);
    }

    fn debug_snapshot_and_dump_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field("import_snapshot", &self.import_snapshot)
            .field("ignore_missing_snapshot", &self.ignore_missing_snapshot)
            .field(
                "ignore_snapshot_if_db_exists",
                &self.ignore_snapshot_if_db_exists,
            )
            .field("snapshot_dir", &self.snapshot_dir)
            .field("schedule_snapshot", &self.schedule_snapshot)
            .field("import_dump", &self.import_dump)
            .field("ignore_missing_dump", &self.ignore_missing_dump)
            .field("ignore_dump_if_db_exists", &self.ignore_dump_if_db_exists)
            .field("dump_dir", &self.dump_dir)
            .field("dump_import_child", &self.dump_import_child);
    }

    fn debug_logging_and_indexing_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field("log_level", &self.log_level)
            .field("max_indexing_memory", &self.max_indexing_memory)
            .field("max_indexing_threads", &self.max_indexing_threads);
    }

    fn debug_experimental_search_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field(
                "experimental_contains_filter",
                &self.experimental_contains_filter,
            )
            .field(
                "experimental_enable_metrics",
                &self.experimental_enable_metrics,
            )
            .field(
                "experimental_enable_logs_route",
                &self.experimental_enable_logs_route,
            )
            .field("experimental_logs_mode", &self.experimental_logs_mode)
            .field(
                "experimental_search_queue_size",
                &self.experimental_search_queue_size,
            )
            .field(
                "experimental_drop_search_after",
                &self.experimental_drop_search_after,
            )
            .field(
                "experimental_nb_searches_per_core",
                &self.experimental_nb_searches_per_core,
            )
            .field(
                "experimental_dumpless_upgrade",
                &self.experimental_dumpless_upgrade,
            )
            .field(
                "experimental_replication_parameters",
                &self.experimental_replication_parameters,
            );
    }

    fn debug_experimental_indexing_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field(
                "experimental_reduce_indexing_memory_usage",
                &self.experimental_reduce_indexing_memory_usage,
            )
            .field(
                "experimental_max_number_of_batched_tasks",
                &self.experimental_max_number_of_batched_tasks,
            )
            .field(
                "experimental_limit_batched_tasks_total_size",
                &self.experimental_limit_batched_tasks_total_size,
            )
            .field(
                "experimental_embedding_cache_entries",
                &self.experimental_embedding_cache_entries,
            )
            .field(
                "experimental_no_snapshot_compaction",
                &self.experimental_no_snapshot_compaction,
            )
            .field("experimental_dsr_fuel", &self.experimental_dsr_fuel)
            .field(
                "experimental_no_edition_2024_for_settings",
                &self.experimental_no_edition_2024_for_settings,
            )
            .field(
                "experimental_no_edition_2024_for_dumps",
                &self.experimental_no_edition_2024_for_dumps,
            )
            .field(
                "experimental_personalization_api_key",
                &redacted(&self.experimental_personalization_api_key),
            )
            .field(
                "experimental_personalization_url",
                &self.experimental_personalization_url.as_str(),
            )
            .field(
                "experimental_allowed_ip_networks",
                &self.experimental_allowed_ip_networks,
            );
    }

    fn debug_deployment_fields(&self, debug: &mut fmt::DebugStruct<'_, '_>) {
        debug
            .field("s3_snapshots", &self.s3_snapshots)
            .field("config_file_path", &self.config_file_path)
            .field("cores", &self.cores)
            .field("shards_per_index", &self.shards_per_index)
            .field("idle_poll", &self.idle_poll)
            .field("max_open_stores", &self.max_open_stores)
            .field("store_idle", &self.store_idle)
            .field("shutdown_drain_delay", &self.shutdown_drain_delay)
            .field("max_cache_memory", &self.max_cache_memory)
            .field("indexing_scheduling", &self.indexing_scheduling)
            .field("documents_per_shard", &self.documents_per_shard)
            .field("rate_limits", &self.rate_limits)
            .field("otlp_traces", &self.otlp_traces)
            .field(
                "vectorstore_reader_prefetch_memory",
                &self.vectorstore_reader_prefetch_memory,
            );
    }
}

/// Why the configuration could not be built.
#[derive(Debug)]
pub enum ConfigError {
    /// Bad command-line arguments or variables (clap's message), or `--help`/`--version`.
    Arguments(clap::Error),
    /// A configuration file named by the user could not be read.
    ConfigFileUnreadable { path: PathBuf, source: io::Error },
    /// The configuration file is not valid TOML.
    ConfigFileInvalid { path: PathBuf, message: String },
    /// The configuration file names an option that does not exist.
    ConfigFileKeyUnknown { path: PathBuf, key: String },
    /// The configuration file sets `config_file_path`.
    ConfigFileKeyNotSupported { path: PathBuf },
    /// A value of the configuration file has the wrong TOML type.
    ConfigFileValueInvalid {
        path: PathBuf,
        key: String,
        expected: &'static str,
    },
    /// A boolean variable holds something that is not a boolean.
    VariableInvalid { name: String, value: String },
    /// A variable we read is not valid UTF-8.
    VariableNotUnicode { name: String },
    /// The process's working directory could not be determined.
    WorkingDirectoryUnreadable { source: io::Error },
    /// `--env production` without a master key.
    MasterKeyMissing { suggestion: String },
    /// `--env production` with a master key shorter than [`MASTER_KEY_BYTES_MIN`].
    MasterKeyTooShort { length: usize, suggestion: String },
    /// S3 snapshot options were given: coresearch does not upload snapshots.
    S3SnapshotsUnsupported { snapshot_dir: PathBuf },
}

impl ConfigError {
    /// The process exit code: 0 for `--help` and `--version`, 2 for a usage error, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            ConfigError::Arguments(error) => error.exit_code(),
            _ => 1,
        }
    }

    /// Prints the error where it belongs (help and version on stdout, the rest on stderr)
    /// and ends the process with [`ConfigError::exit_code`].
    pub fn exit(self) -> ! {
        match self {
            ConfigError::Arguments(error) => error.exit(),
            other => {
                eprintln!("Error: {other}");
                std::process::exit(other.exit_code())
            }
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Arguments(error) => write!(formatter, "{error}"),
            ConfigError::ConfigFileUnreadable { path, source } => write!(
                formatter,
                "unable to open or read the {path:?} configuration file: {source}."
            ),
            ConfigError::ConfigFileInvalid { path, message } => {
                write!(
                    formatter,
                    "the configuration file {path:?} is not valid TOML: {message}"
                )
            }
            ConfigError::ConfigFileKeyUnknown { path, key } => write!(
                formatter,
                "unknown option `{key}` in the configuration file {path:?}; keys are the \
                 snake_case names of the command-line options (`--db-path` is `db_path`)"
            ),
            ConfigError::ConfigFileKeyNotSupported { path } => write!(
                formatter,
                "`{CONFIG_FILE_PATH_KEY}` is not supported in the configuration file ({path:?})"
            ),
            ConfigError::ConfigFileValueInvalid {
                path,
                key,
                expected,
            } => write!(
                formatter,
                "invalid value for `{key}` in the configuration file {path:?}: expected {expected}"
            ),
            ConfigError::VariableInvalid { name, value } => write!(
                formatter,
                "invalid value `{value}` for the environment variable {name}: expected a \
                 boolean (true/false, yes/no, on/off, 1/0)"
            ),
            ConfigError::VariableNotUnicode { name } => {
                write!(
                    formatter,
                    "the environment variable {name} is not valid UTF-8"
                )
            }
            ConfigError::WorkingDirectoryUnreadable { source } => {
                write!(
                    formatter,
                    "could not determine the working directory: {source}"
                )
            }
            ConfigError::MasterKeyMissing { suggestion } => write!(
                formatter,
                "You must provide a master key to secure your instance in a production \
                 environment. It can be specified via the MEILI_MASTER_KEY environment variable \
                 or the --master-key launch option.\n\n{suggestion}"
            ),
            ConfigError::MasterKeyTooShort { length, suggestion } => write!(
                formatter,
                "The master key must be at least {MASTER_KEY_BYTES_MIN} bytes in a production \
                 environment. The provided key is only {length} bytes.\n\n{suggestion}"
            ),
            ConfigError::S3SnapshotsUnsupported { .. } => self.write_unsupported_option(formatter),
        }
    }
}

impl ConfigError {
    /// The refusal of an option this version does not support.
    fn write_unsupported_option(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::S3SnapshotsUnsupported { snapshot_dir } => write!(
                formatter,
                "S3 snapshots are not supported: coresearch writes snapshots into \
                 --snapshot-dir ({snapshot_dir:?}) and does not upload them. Remove \
                 --s3-bucket-url, --s3-bucket-region, --s3-bucket-name, --s3-snapshot-prefix, \
                 the S3 credentials (--s3-access-key, --s3-secret-key, \
                 --experimental-s3-role-arn, --experimental-s3-web-identity-token-file) and the \
                 --experimental-s3-* options, or their MEILI_* variables, and copy the \
                 snapshot files to the bucket another way."
            ),
            // Only the two refusals above are written here (see `Display`).
            _ => Ok(()),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Arguments(error) => Some(error),
            ConfigError::ConfigFileUnreadable { source, .. }
            | ConfigError::WorkingDirectoryUnreadable { source } => Some(source),
            _ => None,
        }
    }
}

impl From<clap::Error> for ConfigError {
    fn from(error: clap::Error) -> Self {
        ConfigError::Arguments(error)
    }
}

/// `--schedule-snapshot`: empty means disabled, otherwise seconds between snapshots.
#[derive(Debug, Clone, Copy)]
struct SnapshotSchedule(Option<u64>);

fn parse_snapshot_schedule(text: &str) -> Result<SnapshotSchedule, String> {
    if text.is_empty() {
        return Ok(SnapshotSchedule(None));
    }
    text.parse::<u64>()
        .map(|seconds| SnapshotSchedule(Some(seconds)))
        .map_err(|error| format!("`{text}` is not a number of seconds: {error}"))
}

/// `--rate-limit-*-burst`: a whole number of requests within the bounds.
fn parse_burst(text: &str) -> Result<Burst, String> {
    text.trim()
        .parse::<u64>()
        .ok()
        .and_then(Burst::new)
        .ok_or_else(|| {
            format!(
                "`{text}` is not a burst: expected a whole number of requests from 1 to {BURST_MAX}"
            )
        })
}

/// `--max-indexing-threads`: empty or `unlimited` means no explicit bound.
#[derive(Debug, Clone, Copy)]
struct IndexingThreads(Option<usize>);

fn parse_indexing_threads(text: &str) -> Result<IndexingThreads, String> {
    if text.is_empty() || text == "unlimited" {
        return Ok(IndexingThreads(None));
    }
    text.parse::<usize>()
        .map(|threads| IndexingThreads(Some(threads)))
        .map_err(|error| format!("`{text}` is not a number of threads or `unlimited`: {error}"))
}

/// A size in bytes, as Meilisearch's byte-unit syntax writes it: `100 MB` (decimal),
/// `2GiB` (binary), `1048576` (plain bytes).
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    byte_unit::Byte::from_str(text)
        .map(|size| size.as_u64())
        .map_err(|error| {
            format!("`{text}` is not a size in bytes (e.g. `100 MB`, `2GiB`): {error}")
        })
}

fn parse_webhook_url(text: &str) -> Result<url::Url, String> {
    url::Url::parse(text).map_err(|error| format!("`{text}` is not a URL: {error}"))
}

/// `--experimental-personalization-url`: an `http` or `https` URL with a host.
fn parse_personalization_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|error| format!("`{text}` is not a URL: {error}"))?;
    if !PERSONALIZATION_URL_SCHEMES.contains(&url.scheme()) || url.host().is_none() {
        return Err(format!("`{text}` is not an http or https URL with a host"));
    }
    Ok(url)
}

/// clap's boolish strings, case-insensitive.
fn parse_boolish(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "on" | "1" => Some(true),
        "n" | "no" | "f" | "false" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

fn default_cores() -> u64 {
    u64::try_from(available_cores())
        .unwrap_or(CORES_MAX)
        .min(CORES_MAX)
}

/// Total memory of the machine in bytes, from `/proc/meminfo`; `None` where unknown.
fn total_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string(MEMINFO_PATH).ok()?;
    meminfo_total_bytes(&meminfo)
}

/// `--shards-per-index`, or the default for `cores`.
fn shards_per_index_or_default(flag: Option<u64>, cores: usize) -> usize {
    flag.and_then(|shards| usize::try_from(shards).ok())
        .unwrap_or_else(|| default_shards_per_index(cores))
}

/// The slice of `--indexing-scheduler-slice-micros` (`None` for 0: the kernel's default).
fn scheduler_slice(micros: u64) -> Option<std::time::Duration> {
    (micros > 0).then(|| std::time::Duration::from_micros(micros))
}

/// The default of `--max-indexing-memory` on this machine: two thirds of its memory, as
/// Meilisearch's.
fn default_indexing_memory() -> Option<u64> {
    total_memory_bytes().map(|total| total / 3 * 2)
}

/// The default of `--max-cache-memory` on this machine.
fn default_cache_memory() -> u64 {
    total_memory_bytes().map_or(CACHE_MEMORY_FALLBACK_BYTES, |total| {
        total / CACHE_MEMORY_SHARE_DIVISOR
    })
}

fn meminfo_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find(|line| line.starts_with(MEMINFO_TOTAL_KEY))?;
    let kibibytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kibibytes.checked_mul(KIBIBYTE_BYTES)
}

/// The flags, as clap sees them. Flag names, variables and defaults are Meilisearch's.
#[derive(Debug, Parser)]
#[command(
    name = "coresearch",
    version,
    about = "A thread-per-core search server that speaks the Meilisearch HTTP API",
    next_display_order = None
)]
// One authentication method: as Meilisearch's implicit `s3_auth` group, not `multiple`, so an
// access key and a role are refused together with its message.
#[command(group(
    ArgGroup::new("s3_auth")
        .args(["s3_access_key", "experimental_s3_role_arn"])
))]
#[command(group(
    ArgGroup::new("s3_snapshots")
        .args([
            "s3_bucket_url",
            "s3_bucket_region",
            "s3_bucket_name",
            "s3_snapshot_prefix",
            "s3_access_key",
            "s3_secret_key",
            "experimental_s3_role_arn",
            "experimental_s3_web_identity_token_file",
            "experimental_s3_max_in_flight_parts",
            "experimental_s3_compression_level",
            "experimental_s3_signature_duration_seconds",
            "experimental_s3_multipart_part_size",
        ])
        .multiple(true)
        .requires_all([
            "s3_bucket_url",
            "s3_bucket_region",
            "s3_bucket_name",
            "s3_snapshot_prefix",
            "s3_auth",
        ])
))]
struct Cli {
    /// Where the database files are created and found.
    #[arg(long, env = "MEILI_DB_PATH", default_value = "./data.ms")]
    db_path: PathBuf,

    /// The HTTP address and port to listen on.
    #[arg(long, env = "MEILI_HTTP_ADDR", default_value = "localhost:7700")]
    http_addr: String,

    /// The master key, protecting every route except `GET /health`.
    #[arg(long, env = "MEILI_MASTER_KEY", hide_env_values = true)]
    master_key: Option<String>,

    /// The environment: `development` or `production` (production requires a master key
    /// of at least 16 bytes).
    #[arg(long, env = "MEILI_ENV", value_enum, default_value = "development")]
    env: Environment,

    /// URL told about every finished batch (the read-only webhook with the nil uuid).
    #[arg(long, env = "MEILI_TASK_WEBHOOK_URL", value_parser = parse_webhook_url)]
    task_webhook_url: Option<url::Url>,

    /// `Authorization` header sent to the task webhook.
    #[arg(
        long,
        env = "MEILI_TASK_WEBHOOK_AUTHORIZATION_HEADER",
        hide_env_values = true
    )]
    task_webhook_authorization_header: Option<String>,

    /// Accepted for compatibility; coresearch sends no telemetry.
    #[arg(long, env = "MEILI_NO_ANALYTICS")]
    no_analytics: bool,

    /// The largest request body accepted (`100 MB`, `2GiB`, or plain bytes).
    #[arg(long, env = "MEILI_HTTP_PAYLOAD_SIZE_LIMIT", default_value = "100 MB", value_parser = parse_byte_size)]
    http_payload_size_limit: u64,

    /// The server's TLS certificate chain (PEM).
    #[arg(long, env = "MEILI_SSL_CERT_PATH")]
    ssl_cert_path: Option<PathBuf>,

    /// The server's TLS private key (PEM).
    #[arg(long, env = "MEILI_SSL_KEY_PATH")]
    ssl_key_path: Option<PathBuf>,

    /// Enables client authentication with the authorities in this file.
    #[arg(long, env = "MEILI_SSL_AUTH_PATH")]
    ssl_auth_path: Option<PathBuf>,

    /// A DER-encoded OCSP response stapled to the certificate.
    #[arg(long, env = "MEILI_SSL_OCSP_PATH")]
    ssl_ocsp_path: Option<PathBuf>,

    /// Makes TLS client authentication mandatory.
    #[arg(long, env = "MEILI_SSL_REQUIRE_AUTH")]
    ssl_require_auth: bool,

    /// Enables TLS session resumption.
    #[arg(long, env = "MEILI_SSL_RESUMPTION")]
    ssl_resumption: bool,

    /// Enables TLS session tickets.
    #[arg(long, env = "MEILI_SSL_TICKETS")]
    ssl_tickets: bool,

    /// Starts after importing this snapshot (into an empty database).
    #[arg(long, env = "MEILI_IMPORT_SNAPSHOT")]
    import_snapshot: Option<PathBuf>,

    /// Do not fail when `--import-snapshot` names no file.
    #[arg(
        long,
        env = "MEILI_IGNORE_MISSING_SNAPSHOT",
        requires = "import_snapshot"
    )]
    ignore_missing_snapshot: bool,

    /// Ignore `--import-snapshot` when a database exists.
    #[arg(
        long,
        env = "MEILI_IGNORE_SNAPSHOT_IF_DB_EXISTS",
        requires = "import_snapshot"
    )]
    ignore_snapshot_if_db_exists: bool,

    /// Where snapshots are written.
    #[arg(long, env = "MEILI_SNAPSHOT_DIR", default_value = "snapshots/")]
    snapshot_dir: PathBuf,

    /// Takes scheduled snapshots, every SNAPSHOT_INTERVAL_SEC seconds (default one day).
    #[arg(
        long,
        env = "MEILI_SCHEDULE_SNAPSHOT",
        num_args = 0..=1,
        default_missing_value = SNAPSHOT_INTERVAL_DEFAULT,
        value_name = "SNAPSHOT_INTERVAL_SEC",
        value_parser = parse_snapshot_schedule
    )]
    schedule_snapshot: Option<SnapshotSchedule>,

    /// Imports this dump file at launch (into an empty database).
    #[arg(long, env = "MEILI_IMPORT_DUMP", conflicts_with = "import_snapshot")]
    import_dump: Option<PathBuf>,

    /// Do not fail when `--import-dump` names no file.
    #[arg(long, env = "MEILI_IGNORE_MISSING_DUMP", requires = "import_dump")]
    ignore_missing_dump: bool,

    /// Ignore `--import-dump` when a database exists.
    #[arg(long, env = "MEILI_IGNORE_DUMP_IF_DB_EXISTS", requires = "import_dump")]
    ignore_dump_if_db_exists: bool,

    /// Where dumps are written.
    #[arg(long, env = "MEILI_DUMP_DIR", default_value = "dumps/")]
    dump_dir: PathBuf,

    /// Log verbosity: OFF, ERROR, WARN, INFO, DEBUG or TRACE (case-insensitive).
    #[arg(long, env = "MEILI_LOG_LEVEL", default_value = "INFO", value_parser = LogLevel::from_str)]
    log_level: LogLevel,

    /// Most memory used by indexing (default: two thirds of the machine's memory).
    #[arg(long, env = "MEILI_MAX_INDEXING_MEMORY", value_parser = parse_byte_size)]
    max_indexing_memory: Option<u64>,

    /// Accepted for compatibility (a number or `unlimited`); coresearch indexes on its shard
    /// cores, set by `--cores`.
    #[arg(long, env = "MEILI_MAX_INDEXING_THREADS", value_parser = parse_indexing_threads)]
    max_indexing_threads: Option<IndexingThreads>,

    /// Forces the `containsFilter` experimental feature on.
    #[arg(long, env = "MEILI_EXPERIMENTAL_CONTAINS_FILTER")]
    experimental_contains_filter: bool,

    /// Forces the `metrics` experimental feature on (`GET /metrics`).
    #[arg(long, env = "MEILI_EXPERIMENTAL_ENABLE_METRICS")]
    experimental_enable_metrics: bool,

    /// Searches that may wait before 503, shared out between the cores.
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_SEARCH_QUEUE_SIZE",
        default_value = "1000"
    )]
    experimental_search_queue_size: usize,

    /// Seconds after which a waiting search is dropped.
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_DROP_SEARCH_AFTER",
        default_value = "60"
    )]
    experimental_drop_search_after: NonZeroUsize,

    /// Concurrent searches per core.
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_NB_SEARCHES_PER_CORE",
        default_value = "4"
    )]
    experimental_nb_searches_per_core: NonZeroUsize,

    /// Log format on stderr: HUMAN or JSON.
    #[arg(long, env = "MEILI_EXPERIMENTAL_LOGS_MODE", default_value = "HUMAN", value_parser = LogMode::from_str)]
    experimental_logs_mode: LogMode,

    /// Upgrades the database without a dump. Accepted with nothing to do: coresearch has one
    /// data directory format (Meilisearch databases come in by dumps).
    #[arg(long, env = "MEILI_EXPERIMENTAL_DUMPLESS_UPGRADE")]
    experimental_dumpless_upgrade: bool,

    /// Forces the `logsRoute` experimental feature on (`/logs/stream`, `/logs/stderr`).
    #[arg(long, env = "MEILI_EXPERIMENTAL_ENABLE_LOGS_ROUTE")]
    experimental_enable_logs_route: bool,

    /// Enables the `TaskId`/`DryRun` headers of task-creating routes and disables the
    /// automatic deletion of old tasks.
    #[arg(long, env = "MEILI_EXPERIMENTAL_REPLICATION_PARAMETERS")]
    experimental_replication_parameters: bool,

    /// Accepted for compatibility; indexing memory is bounded by `--max-indexing-memory`.
    #[arg(long, env = "MEILI_EXPERIMENTAL_REDUCE_INDEXING_MEMORY_USAGE")]
    experimental_reduce_indexing_memory_usage: bool,

    /// Most tasks in one batch.
    #[arg(long, env = "MEILI_EXPERIMENTAL_MAX_NUMBER_OF_BATCHED_TASKS", default_value_t = usize::MAX)]
    experimental_max_number_of_batched_tasks: usize,

    /// Most total payload size of one batch (default: half the indexing memory, at most
    /// 10 GiB).
    #[arg(long, env = "MEILI_EXPERIMENTAL_LIMIT_BATCHED_TASKS_TOTAL_SIZE", value_parser = parse_byte_size)]
    experimental_limit_batched_tasks_total_size: Option<u64>,

    /// Query embeddings cached per embedder (least recently used first out; 0: no cache).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_EMBEDDING_CACHE_ENTRIES",
        default_value = "0"
    )]
    experimental_embedding_cache_entries: usize,

    /// Snapshots copy the shards' page stores as they are, without compacting them.
    #[arg(long, env = "MEILI_EXPERIMENTAL_NO_SNAPSHOT_COMPACTION")]
    experimental_no_snapshot_compaction: bool,

    /// Most distinct query words (in sorted order) a dynamic search rule's `words` condition is checked against.
    #[arg(long, env = "MEILI_EXPERIMENTAL_DSR_FUEL_MAX_COUNTED_WORDS", default_value_t = DSR_FUEL_MAX_COUNTED_WORDS_DEFAULT)]
    experimental_dsr_fuel_max_counted_words: u8,

    /// Most applying dynamic search rules, by precedence, that may pin documents in one search.
    #[arg(long, env = "MEILI_EXPERIMENTAL_DSR_FUEL_MAX_ACTIVE_RULES", default_value_t = DSR_FUEL_MAX_ACTIVE_RULES_DEFAULT)]
    experimental_dsr_fuel_max_active_rules: u32,

    /// Most documents one search's dynamic search rules pin at most.
    #[arg(long, env = "MEILI_EXPERIMENTAL_DSR_FUEL_MAX_PIN_ACTIONS", default_value_t = DSR_FUEL_MAX_PIN_ACTIONS_DEFAULT)]
    experimental_dsr_fuel_max_pin_actions: u32,

    /// Most rule words one search looks up among the query's words.
    #[arg(long, env = "MEILI_EXPERIMENTAL_DSR_FUEL_WORD_FUEL", default_value_t = DSR_FUEL_WORD_FUEL_DEFAULT)]
    experimental_dsr_fuel_word_fuel: u32,

    /// Accepted for compatibility (Meilisearch's choice of indexer for settings changes):
    /// coresearch has one indexer, so settings apply the same either way.
    #[arg(long, env = "MEILI_EXPERIMENTAL_NO_EDITION_2024_FOR_SETTINGS")]
    experimental_no_edition_2024_for_settings: bool,

    /// Accepted for compatibility (Meilisearch's choice of indexer for dump imports):
    /// coresearch has one indexer, so imports are the same either way.
    #[arg(long, env = "MEILI_EXPERIMENTAL_NO_EDITION_2024_FOR_DUMPS")]
    experimental_no_edition_2024_for_dumps: bool,

    /// API key of the personalization service (a Cohere-compatible rerank API): enables
    /// `personalize` in searches. A blank key leaves personalization off.
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_PERSONALIZATION_API_KEY",
        hide_env_values = true
    )]
    experimental_personalization_api_key: Option<String>,

    /// The rerank endpoint personalized search calls, http or https (coresearch's own:
    /// Meilisearch 1.41 always calls Cohere's).
    #[arg(
        long,
        env = "CORESEARCH_EXPERIMENTAL_PERSONALIZATION_URL",
        default_value = PERSONALIZATION_URL_DEFAULT,
        value_parser = parse_personalization_url
    )]
    experimental_personalization_url: url::Url,

    /// Comma-separated networks (CIDR, or `any`) that outgoing requests (embedders) may
    /// reach besides global addresses.
    #[arg(long, env = "MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS", value_delimiter = ',', action = clap::ArgAction::Set)]
    experimental_allowed_ip_networks: Vec<cidr::AnyIpCidr>,

    /// S3 bucket URL for snapshots. Refused at start (no S3 upload).
    #[arg(long, env = "MEILI_S3_BUCKET_URL")]
    s3_bucket_url: Option<String>,

    /// S3 bucket region. Refused at start (no S3 upload).
    #[arg(long, env = "MEILI_S3_BUCKET_REGION")]
    s3_bucket_region: Option<String>,

    /// S3 bucket name. Refused at start (no S3 upload).
    #[arg(long, env = "MEILI_S3_BUCKET_NAME")]
    s3_bucket_name: Option<String>,

    /// Prefix of snapshot objects in the bucket. Refused at start (no S3 upload).
    #[arg(long, env = "MEILI_S3_SNAPSHOT_PREFIX")]
    s3_snapshot_prefix: Option<String>,

    /// S3 access key. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_S3_ACCESS_KEY",
        hide_env_values = true,
        requires = "s3_secret_key"
    )]
    s3_access_key: Option<String>,

    /// S3 secret key. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_S3_SECRET_KEY",
        hide_env_values = true,
        conflicts_with_all = ["experimental_s3_role_arn", "experimental_s3_web_identity_token_file"]
    )]
    s3_secret_key: Option<String>,

    /// Role to assume for S3. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_S3_ROLE_ARN",
        requires = "experimental_s3_web_identity_token_file"
    )]
    experimental_s3_role_arn: Option<String>,

    /// Web identity token file for S3. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_S3_WEB_IDENTITY_TOKEN_FILE",
        conflicts_with_all = ["s3_access_key", "s3_secret_key"]
    )]
    experimental_s3_web_identity_token_file: Option<PathBuf>,

    /// Parts uploaded at once. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_S3_MAX_IN_FLIGHT_PARTS",
        default_value = "10"
    )]
    experimental_s3_max_in_flight_parts: NonZeroUsize,

    /// Compression level of snapshots sent to S3. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_S3_COMPRESSION_LEVEL",
        default_value = "0"
    )]
    experimental_s3_compression_level: u32,

    /// Lifetime of S3 request signatures, in seconds. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_S3_SIGNATURE_DURATION_SECONDS",
        default_value = "28800"
    )]
    experimental_s3_signature_duration_seconds: u64,

    /// Size of each multipart part. Refused at start (no S3 upload).
    #[arg(
        long,
        env = "MEILI_EXPERIMENTAL_S3_MULTIPART_PART_SIZE",
        default_value_t = S3_MULTIPART_PART_BYTES_DEFAULT,
        value_parser = parse_byte_size
    )]
    experimental_s3_multipart_part_size: u64,

    /// A TOML configuration file (default `./config.toml`, ignored when missing). Its keys
    /// are the snake_case option names; flags and environment variables win over it. Also
    /// read from MEILI_CONFIG_FILE_PATH.
    #[arg(long)]
    config_file_path: Option<PathBuf>,

    /// Cores to run on, one pinned executor each (default: all available cores).
    #[arg(
        long,
        env = "CORESEARCH_CORES",
        default_value_t = default_cores(),
        value_parser = clap::value_parser!(u64).range(1..=CORES_MAX)
    )]
    cores: u64,

    /// Shards of each new index (default: one on a server of up to two cores, else the
    /// number of cores).
    #[arg(
        long,
        env = "CORESEARCH_SHARDS_PER_INDEX",
        value_parser = clap::value_parser!(u64).range(1..=SHARDS_PER_INDEX_MAX)
    )]
    shards_per_index: Option<u64>,

    /// Microseconds a core that ran out of work keeps polling before it sleeps: lower
    /// latency at low concurrency against CPU taken from indexing (0: sleep at once).
    #[arg(
        long,
        env = "CORESEARCH_IDLE_POLL_MICROS",
        default_value_t = IDLE_POLL_MICROS_DEFAULT,
        value_parser = clap::value_parser!(u64).range(0..=IDLE_POLL_MICROS_MAX)
    )]
    idle_poll_micros: u64,

    /// Shards (page stores) kept open at most; past it the least recently used that nobody
    /// reads are closed, and opened again on their next request (default: what the
    /// process's open-file limit and `vm.max_map_count` allow).
    #[arg(
        long,
        env = "CORESEARCH_MAX_OPEN_STORES",
        value_parser = clap::value_parser!(u64).range(1..=OPEN_STORES_MAX)
    )]
    max_open_stores: Option<u64>,

    /// Seconds after which a shard nobody used is closed (opened again on its next request).
    #[arg(
        long,
        env = "CORESEARCH_STORE_IDLE_SECONDS",
        default_value_t = STORE_IDLE_SECONDS_DEFAULT,
        value_parser = clap::value_parser!(u64).range(1..=STORE_IDLE_SECONDS_MAX)
    )]
    store_idle_seconds: u64,

    /// Seconds the server keeps serving after SIGTERM or SIGINT while `GET /health` answers
    /// 503 `{"status":"draining"}`, so that a load balancer stops sending it requests before
    /// it stops accepting them (0 to 300; default 0: stop accepting at once).
    #[arg(
        long,
        env = "CORESEARCH_SHUTDOWN_DRAIN_DELAY_SECONDS",
        default_value_t = 0,
        value_parser = clap::value_parser!(u64).range(0..=SHUTDOWN_DRAIN_DELAY_SECONDS_MAX)
    )]
    shutdown_drain_delay_seconds: u64,

    /// Memory the search caches of every open index may take together (`2 GiB`, `500 MB`…);
    /// past it, new cache entries are not kept and the least recently used indexes are
    /// closed (default: a quarter of the machine's memory).
    #[arg(long, env = "CORESEARCH_MAX_CACHE_MEMORY", value_parser = parse_byte_size)]
    max_cache_memory: Option<u64>,

    /// Percent of each CPU that indexing keeps while searches keep it busy (1 to 50; an idle
    /// CPU is all indexing's). Larger makes writes visible sooner under a full search load,
    /// at the cost of search throughput.
    #[arg(
        long,
        env = "CORESEARCH_INDEXING_CPU_SHARE",
        default_value_t = INDEXING_CPU_SHARE_DEFAULT,
        value_parser = clap::value_parser!(u8).range(1..=i64::from(INDEXING_CPU_SHARE_MAX))
    )]
    indexing_cpu_share: u8,

    /// The scheduler slice, in microseconds, that the threads that index ask the kernel for
    /// (Linux 6.12 and later take it; 0 keeps the kernel's default slice, as an older kernel
    /// does whatever it is asked).
    #[arg(
        long,
        env = "CORESEARCH_INDEXING_SCHEDULER_SLICE_MICROS",
        default_value_t = INDEXING_SCHEDULER_SLICE_MICROS_DEFAULT,
        value_parser = clap::value_parser!(u64).range(0..=INDEXING_SCHEDULER_SLICE_MICROS_MAX)
    )]
    indexing_scheduler_slice_micros: u64,

    /// The kernel scheduling policy of the threads that index: `batch` (a thread waking from
    /// its pacing sleep never preempts a core's executor) or `normal`.
    #[arg(
        long,
        env = "CORESEARCH_INDEXING_SCHEDULER_POLICY",
        value_enum,
        default_value_t = IndexingSchedulerPolicy::Batch
    )]
    indexing_scheduler_policy: IndexingSchedulerPolicy,

    /// Seconds a write may wait, from its registration, before indexing stops giving way to
    /// searches: its batch then takes an even split of every CPU with the searches until it
    /// ends (0: writes always keep only `--indexing-cpu-share` under a full search load).
    #[arg(
        long,
        env = "CORESEARCH_WRITE_VISIBILITY_TARGET_SECONDS",
        default_value_t = WRITE_VISIBILITY_TARGET_SECONDS_DEFAULT,
        value_parser = clap::value_parser!(u64).range(0..=WRITE_VISIBILITY_TARGET_SECONDS_MAX)
    )]
    write_visibility_target_seconds: u64,

    /// Documents per shard before an index grows: a new index starts with one shard and
    /// doubles its shards, up to `--shards-per-index`, when it would hold more per shard (0:
    /// a new index gets `--shards-per-index` shards at once).
    #[arg(
        long,
        env = "CORESEARCH_DOCUMENTS_PER_SHARD",
        default_value_t = DOCUMENTS_PER_SHARD_DEFAULT,
        value_parser = clap::value_parser!(u64).range(0..=DOCUMENTS_PER_SHARD_MAX)
    )]
    documents_per_shard: u64,

    /// Loads each vector graph into memory when its shard opens (node pages, record ids and
    /// navigation vectors, and a huge-page copy of the vectors).
    #[arg(long, env = "VECTORSTORE_READER_PREFETCH_MEMORY")]
    vectorstore_reader_prefetch_memory: bool,

    /// The `--rate-limit-*` options.
    #[command(flatten)]
    rate_limit_flags: RateLimitFlags,

    /// The `--experimental-otlp-traces-*` options.
    #[command(flatten)]
    trace_flags: TraceFlags,
}

/// The `--experimental-otlp-traces-*` options (see `crate::traces`), apart so the
/// configuration reads them in one step.
#[derive(Debug, clap::Args)]
struct TraceFlags {
    /// The OTLP/HTTP endpoint traces are exported to (http or https; spans are posted as
    /// JSON to `<URL>/v1/traces`). Tracing is off without it. An unreachable endpoint is
    /// logged, never fatal.
    #[arg(
        long,
        env = "CORESEARCH_EXPERIMENTAL_OTLP_TRACES_ENDPOINT",
        value_name = "URL",
        value_parser = parse_otlp_endpoint
    )]
    experimental_otlp_traces_endpoint: Option<url::Url>,

    /// The share of new traces recorded, from 0 to 1 (a request with a `traceparent`
    /// follows its sampled flag).
    #[arg(
        long,
        env = "CORESEARCH_EXPERIMENTAL_OTLP_TRACES_SAMPLING_RATIO",
        value_name = "RATIO",
        default_value_t = OTLP_TRACES_SAMPLING_RATIO_DEFAULT,
        value_parser = parse_sampling_ratio,
        requires = "experimental_otlp_traces_endpoint"
    )]
    experimental_otlp_traces_sampling_ratio: f64,

    /// The `service.name` the traces are reported under.
    #[arg(
        long,
        env = "CORESEARCH_EXPERIMENTAL_OTLP_TRACES_SERVICE_NAME",
        value_name = "NAME",
        default_value = OTLP_TRACES_SERVICE_NAME_DEFAULT,
        requires = "experimental_otlp_traces_endpoint"
    )]
    experimental_otlp_traces_service_name: String,
}

impl TraceFlags {
    /// The export settings, when an endpoint is given.
    fn settings(self) -> Option<crate::traces::ExportSettings> {
        let endpoint = self.experimental_otlp_traces_endpoint?;
        Some(crate::traces::ExportSettings {
            endpoint,
            sampling_ratio: self.experimental_otlp_traces_sampling_ratio,
            service_name: self.experimental_otlp_traces_service_name,
        })
    }
}

/// The share of new traces recorded by default: all of them.
pub const OTLP_TRACES_SAMPLING_RATIO_DEFAULT: f64 = 1.0;
/// The `service.name` of the traces by default.
pub const OTLP_TRACES_SERVICE_NAME_DEFAULT: &str = "coresearch";

/// `--experimental-otlp-traces-endpoint`: an `http` or `https` URL with a host.
fn parse_otlp_endpoint(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|error| format!("`{text}` is not a URL: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("`{text}` is not an http or https URL with a host"));
    }
    Ok(url)
}

/// `--experimental-otlp-traces-sampling-ratio`: a number from 0 to 1.
fn parse_sampling_ratio(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
        _ => Err(format!("`{text}` is not a number from 0 to 1")),
    }
}

/// The `--rate-limit-*` options (see `crate::auth::rate_limit`), apart so the configuration
/// reads them in one step.
#[derive(Debug, clap::Args)]
struct RateLimitFlags {
    /// Requests per second each API key may send to the instance (0.001 to 1000000; off when
    /// not given). The master key is not limited. Shared out between the cores: see
    /// `crate::auth::rate_limit`.
    #[arg(
        long,
        env = "CORESEARCH_RATE_LIMIT_API_KEY_REQUESTS_PER_SECOND",
        value_name = "RATE",
        value_parser = RequestsPerSecond::parse
    )]
    rate_limit_api_key_requests_per_second: Option<RequestsPerSecond>,

    /// Requests an API key may send at once after a quiet period (1 to 1000000; default one
    /// second of its rate).
    #[arg(
        long,
        env = "CORESEARCH_RATE_LIMIT_API_KEY_BURST",
        value_name = "REQUESTS",
        value_parser = parse_burst,
        requires = "rate_limit_api_key_requests_per_second"
    )]
    rate_limit_api_key_burst: Option<Burst>,

    /// Requests per second each tenant token may send to the instance (0.001 to 1000000; off
    /// when not given).
    #[arg(
        long,
        env = "CORESEARCH_RATE_LIMIT_TENANT_TOKEN_REQUESTS_PER_SECOND",
        value_name = "RATE",
        value_parser = RequestsPerSecond::parse
    )]
    rate_limit_tenant_token_requests_per_second: Option<RequestsPerSecond>,

    /// Requests a tenant token may send at once after a quiet period (1 to 1000000; default
    /// one second of its rate).
    #[arg(
        long,
        env = "CORESEARCH_RATE_LIMIT_TENANT_TOKEN_BURST",
        value_name = "REQUESTS",
        value_parser = parse_burst,
        requires = "rate_limit_tenant_token_requests_per_second"
    )]
    rate_limit_tenant_token_burst: Option<Burst>,
}

impl RateLimitFlags {
    /// The rate limits the flags (or variables) set.
    fn limits(&self) -> RateLimits {
        RateLimits {
            api_key: self
                .rate_limit_api_key_requests_per_second
                .map(|rate| RateLimit::new(rate, self.rate_limit_api_key_burst)),
            tenant_token: self
                .rate_limit_tenant_token_requests_per_second
                .map(|rate| RateLimit::new(rate, self.rate_limit_tenant_token_burst)),
        }
    }
}

impl Cli {
    /// The dynamic search rules' limits the flags (or variables) set.
    fn dsr_fuel(&self) -> RuleFuel {
        RuleFuel {
            max_counted_words: self.experimental_dsr_fuel_max_counted_words,
            max_active_rules: self.experimental_dsr_fuel_max_active_rules,
            max_pin_actions: self.experimental_dsr_fuel_max_pin_actions,
            word_fuel: self.experimental_dsr_fuel_word_fuel,
        }
    }
}

/// What clap knows of one option that has an environment variable.
struct OptionSpec {
    long: String,
    variable: String,
    takes_value: bool,
}

/// Every option that can come from a variable or the configuration file.
fn option_specs(command: &clap::Command) -> Vec<OptionSpec> {
    command
        .get_arguments()
        .filter_map(|argument| {
            let long = argument.get_long()?;
            let variable = argument.get_env()?.to_str()?;
            Some(OptionSpec {
                long: long.to_owned(),
                variable: variable.to_owned(),
                takes_value: argument.get_action().takes_values(),
            })
        })
        .collect()
}

/// The UTF-8 arguments after the program name and before a `--` separator (a non-UTF-8
/// argument can only be a value, never an option name).
fn option_tokens(arguments: &[OsString]) -> impl Iterator<Item = &str> {
    arguments
        .iter()
        .skip(1)
        .map(|argument| argument.to_str())
        .take_while(|text| *text != Some("--"))
        .flatten()
}

/// The long option names present on the command line (before any `--`).
fn long_names_given(arguments: &[OsString]) -> BTreeSet<String> {
    option_tokens(arguments)
        .filter_map(|text| text.strip_prefix("--"))
        .map(|name| {
            name.split_once('=')
                .map_or(name, |(name, _)| name)
                .to_owned()
        })
        .collect()
}

/// The value of `--config-file-path` on the command line, if any.
fn config_file_path_given(arguments: &[OsString]) -> Option<PathBuf> {
    let flag = format!("--{CONFIG_FILE_PATH_FLAG}");
    let flag_with_value = format!("{flag}=");
    let mut tokens = arguments.iter().skip(1);
    let mut found = None;
    while let Some(token) = tokens.next() {
        let Some(text) = token.to_str() else { continue };
        if text == "--" {
            break;
        }
        if text == flag {
            found = tokens.next().map(PathBuf::from);
        } else if let Some(value) = text.strip_prefix(&flag_with_value) {
            found = Some(PathBuf::from(value));
        }
    }
    found
}

fn asks_for_help_or_version(arguments: &[OsString]) -> bool {
    option_tokens(arguments).any(|text| matches!(text, "-h" | "--help" | "-V" | "--version"))
}

/// Turns one TOML value of the configuration file into the text its variable would hold.
fn config_value_text(
    path: &Path,
    key: &str,
    spec: &OptionSpec,
    value: &toml::Value,
) -> Result<Option<String>, ConfigError> {
    let invalid = |expected| ConfigError::ConfigFileValueInvalid {
        path: path.to_path_buf(),
        key: key.to_owned(),
        expected,
    };
    if !spec.takes_value {
        return match value {
            toml::Value::Boolean(flag) => Ok(Some(flag.to_string())),
            _ => Err(invalid("a boolean")),
        };
    }
    match value {
        toml::Value::String(text) => Ok(Some(text.clone())),
        toml::Value::Integer(number) => Ok(Some(number.to_string())),
        toml::Value::Float(number) => Ok(Some(number.to_string())),
        // `schedule_snapshot = true` means the default interval, `false` means disabled.
        toml::Value::Boolean(flag) if key == "schedule_snapshot" => {
            Ok(flag.then(|| SNAPSHOT_INTERVAL_DEFAULT.to_owned()))
        }
        toml::Value::Array(items) => {
            let texts: Option<Vec<&str>> = items.iter().map(toml::Value::as_str).collect();
            texts
                .map(|texts| Some(texts.join(",")))
                .ok_or_else(|| invalid("an array of strings"))
        }
        _ => Err(invalid("a string or a number")),
    }
}

/// Reads the configuration file and adds its values as variables not already set.
/// Returns the path of the file read, if any.
fn merge_config_file(
    arguments: &[OsString],
    variables: &mut HashMap<String, String>,
    specs: &[OptionSpec],
    cwd: &Path,
) -> Result<Option<PathBuf>, ConfigError> {
    let user_path = config_file_path_given(arguments)
        .or_else(|| variables.get(CONFIG_FILE_PATH_VARIABLE).map(PathBuf::from));
    let path = cwd.join(
        user_path
            .clone()
            .unwrap_or_else(|| PathBuf::from(CONFIG_FILE_PATH_DEFAULT)),
    );
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(source) => {
            return match user_path {
                Some(_) => Err(ConfigError::ConfigFileUnreadable { path, source }),
                None => Ok(None),
            };
        }
    };
    let table: toml::Table =
        toml::from_str(&text).map_err(|error| ConfigError::ConfigFileInvalid {
            path: path.clone(),
            message: error.to_string(),
        })?;
    if table.contains_key(CONFIG_FILE_PATH_KEY) {
        return Err(ConfigError::ConfigFileKeyNotSupported { path });
    }
    for (key, value) in &table {
        let spec = specs
            .iter()
            .find(|spec| spec.long.replace('-', "_") == *key)
            .ok_or_else(|| ConfigError::ConfigFileKeyUnknown {
                path: path.clone(),
                key: key.clone(),
            })?;
        if let Some(text) = config_value_text(&path, key, spec, value)? {
            variables.entry(spec.variable.clone()).or_insert(text);
        }
    }
    Ok(Some(path))
}

/// The command line clap parses: environment-derived `--flag=value` arguments for every
/// option the user did not name, followed by the user's own arguments.
fn arguments_with_variables(
    arguments: &[OsString],
    variables: &HashMap<String, String>,
    specs: &[OptionSpec],
) -> Result<Vec<OsString>, ConfigError> {
    let given = long_names_given(arguments);
    let mut combined: Vec<OsString> = arguments.iter().take(1).cloned().collect();
    if combined.is_empty() {
        combined.push(OsString::from("coresearch"));
    }
    for spec in specs.iter().filter(|spec| !given.contains(&spec.long)) {
        let Some(value) = variables.get(&spec.variable) else {
            continue;
        };
        if spec.takes_value {
            combined.push(OsString::from(format!("--{}={value}", spec.long)));
            continue;
        }
        match parse_boolish(value) {
            Some(true) => combined.push(OsString::from(format!("--{}", spec.long))),
            Some(false) => {}
            None => {
                return Err(ConfigError::VariableInvalid {
                    name: spec.variable.clone(),
                    value: value.clone(),
                });
            }
        }
    }
    combined.extend(arguments.iter().skip(1).cloned());
    Ok(combined)
}

impl Config {
    /// Builds the configuration from the process's arguments, environment and working
    /// directory. A SIGHUP reload calls it again (`crate::server`'s `reload`): the same
    /// precedence and the same errors as at start, over the configuration file as it is now.
    pub fn from_args_and_env() -> Result<Config, ConfigError> {
        let cwd = std::env::current_dir()
            .map_err(|source| ConfigError::WorkingDirectoryUnreadable { source })?;
        let variables = process_variables()?;
        let mut config = Config::parse_from(std::env::args_os(), &variables, &cwd)?;
        config.check_s3_snapshots()?;
        config.dump_import_child = std::env::var_os(DUMP_IMPORT_CHILD_VARIABLE).map(PathBuf::from);
        Ok(config)
    }

    /// The command that runs this program again, with the same arguments and environment,
    /// as the child that indexes a dump into `data_directory` (see
    /// [`DUMP_IMPORT_CHILD_VARIABLE`]).
    pub fn dump_import_child_command(
        data_directory: &Path,
    ) -> std::io::Result<std::process::Command> {
        let mut command = std::process::Command::new(std::env::current_exe()?);
        command
            .args(std::env::args_os().skip(1))
            .env(DUMP_IMPORT_CHILD_VARIABLE, data_directory);
        Ok(command)
    }

    /// Builds the configuration from `arguments` (the first one is the program name),
    /// `variables` standing for the environment, and `cwd` for the working directory.
    /// Never reads the process environment.
    pub fn parse_from<I, T>(
        arguments: I,
        variables: &HashMap<String, String>,
        cwd: &Path,
    ) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let arguments: Vec<OsString> = arguments.into_iter().map(Into::into).collect();
        if asks_for_help_or_version(&arguments) {
            // Help shows the variables, so it is rendered by the untouched command.
            Cli::command().try_get_matches_from(&arguments)?;
        }
        let command = Cli::command();
        let specs = option_specs(&command);
        let mut variables = variables.clone();
        let config_file_path = merge_config_file(&arguments, &mut variables, &specs, cwd)?;
        let combined = arguments_with_variables(&arguments, &variables, &specs)?;
        let matches = command
            .mut_args(|argument| argument.env(None))
            .try_get_matches_from(combined)?;
        let cli = Cli::from_arg_matches(&matches)?;
        let config = Config::from_cli(cli, config_file_path, cwd);
        config.check_master_key()?;
        Ok(config)
    }

    fn from_cli(cli: Cli, config_file_path: Option<PathBuf>, cwd: &Path) -> Config {
        let resolve = |path: PathBuf| cwd.join(path);
        let cores = usize::try_from(cli.cores).unwrap_or(available_cores());
        Config {
            // These three read the whole `cli`, so they come before any field moves out of it.
            s3_snapshots: s3_snapshot_config(&cli, cwd),
            experimental_dsr_fuel: cli.dsr_fuel(),
            indexing_scheduling: IndexingScheduling::from_cli(&cli),
            db_path: resolve(cli.db_path),
            http_addr: cli.http_addr,
            master_key: cli.master_key,
            env: cli.env,
            task_webhook_url: cli.task_webhook_url,
            task_webhook_authorization_header: cli.task_webhook_authorization_header,
            no_analytics: cli.no_analytics,
            http_payload_size_limit: cli.http_payload_size_limit,
            ssl_cert_path: cli.ssl_cert_path.map(resolve),
            ssl_key_path: cli.ssl_key_path.map(resolve),
            ssl_auth_path: cli.ssl_auth_path.map(resolve),
            ssl_ocsp_path: cli.ssl_ocsp_path.map(resolve),
            ssl_require_auth: cli.ssl_require_auth,
            ssl_resumption: cli.ssl_resumption,
            ssl_tickets: cli.ssl_tickets,
            import_snapshot: cli.import_snapshot.map(resolve),
            ignore_missing_snapshot: cli.ignore_missing_snapshot,
            ignore_snapshot_if_db_exists: cli.ignore_snapshot_if_db_exists,
            snapshot_dir: resolve(cli.snapshot_dir),
            schedule_snapshot: cli.schedule_snapshot.and_then(|schedule| schedule.0),
            import_dump: cli.import_dump.map(resolve),
            ignore_missing_dump: cli.ignore_missing_dump,
            ignore_dump_if_db_exists: cli.ignore_dump_if_db_exists,
            dump_dir: resolve(cli.dump_dir),
            log_level: cli.log_level,
            max_indexing_memory: cli.max_indexing_memory.or_else(default_indexing_memory),
            max_indexing_threads: cli.max_indexing_threads.and_then(|threads| threads.0),
            experimental_contains_filter: cli.experimental_contains_filter,
            experimental_enable_metrics: cli.experimental_enable_metrics,
            experimental_enable_logs_route: cli.experimental_enable_logs_route,
            experimental_logs_mode: cli.experimental_logs_mode,
            experimental_search_queue_size: cli.experimental_search_queue_size,
            experimental_drop_search_after: cli.experimental_drop_search_after,
            experimental_nb_searches_per_core: cli.experimental_nb_searches_per_core,
            experimental_dumpless_upgrade: cli.experimental_dumpless_upgrade,
            experimental_replication_parameters: cli.experimental_replication_parameters,
            experimental_reduce_indexing_memory_usage: cli
                .experimental_reduce_indexing_memory_usage,
            experimental_max_number_of_batched_tasks: cli.experimental_max_number_of_batched_tasks,
            experimental_limit_batched_tasks_total_size: cli
                .experimental_limit_batched_tasks_total_size,
            experimental_embedding_cache_entries: cli.experimental_embedding_cache_entries,
            experimental_no_snapshot_compaction: cli.experimental_no_snapshot_compaction,
            experimental_no_edition_2024_for_settings: cli
                .experimental_no_edition_2024_for_settings,
            experimental_no_edition_2024_for_dumps: cli.experimental_no_edition_2024_for_dumps,
            dump_import_child: None,
            experimental_personalization_api_key: cli.experimental_personalization_api_key,
            experimental_personalization_url: cli.experimental_personalization_url,
            experimental_allowed_ip_networks: cli.experimental_allowed_ip_networks,
            config_file_path,
            cores,
            shards_per_index: shards_per_index_or_default(cli.shards_per_index, cores),
            idle_poll: std::time::Duration::from_micros(cli.idle_poll_micros),
            vectorstore_reader_prefetch_memory: cli.vectorstore_reader_prefetch_memory,
            max_open_stores: cli.max_open_stores.map(saturating_usize),
            store_idle: std::time::Duration::from_secs(cli.store_idle_seconds),
            shutdown_drain_delay: std::time::Duration::from_secs(cli.shutdown_drain_delay_seconds),
            max_cache_memory: cli.max_cache_memory.unwrap_or_else(default_cache_memory),
            documents_per_shard: cli.documents_per_shard,
            rate_limits: cli.rate_limit_flags.limits(),
            otlp_traces: cli.trace_flags.settings(),
        }
    }

    /// Refuses a production configuration without a master key of at least
    /// [`MASTER_KEY_BYTES_MIN`] bytes.
    fn check_master_key(&self) -> Result<(), ConfigError> {
        if self.env != Environment::Production {
            return Ok(());
        }
        match &self.master_key {
            None => Err(ConfigError::MasterKeyMissing {
                suggestion: generated_master_key_message(),
            }),
            Some(key) if key.len() < MASTER_KEY_BYTES_MIN => Err(ConfigError::MasterKeyTooShort {
                length: key.len(),
                suggestion: generated_master_key_message(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Refuses S3 snapshot options (once clap has checked them as Meilisearch does): snapshots
    /// are only written to `--snapshot-dir`, and an option that does nothing is not accepted.
    pub fn check_s3_snapshots(&self) -> Result<(), ConfigError> {
        match &self.s3_snapshots {
            Some(_) => Err(ConfigError::S3SnapshotsUnsupported {
                snapshot_dir: self.snapshot_dir.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The warning to print at launch in development when the master key is missing or
    /// shorter than [`MASTER_KEY_BYTES_MIN`]; `None` when there is nothing to warn about.
    pub fn master_key_warning(&self) -> Option<String> {
        if self.env != Environment::Development {
            return None;
        }
        let problem = match &self.master_key {
            None => " No master key was found. The server will accept unidentified requests.",
            Some(key) if key.len() < MASTER_KEY_BYTES_MIN => {
                " coresearch started with a master key considered unsafe for use in a \
                 production environment."
            }
            Some(_) => return None,
        };
        Some(format!(
            "{problem}\n\n A master key of at least {MASTER_KEY_BYTES_MIN} bytes will be required \
             when switching to a production environment.\n\n{}\n\nRestart coresearch with the \
             argument above to use this new and secure master key.",
            generated_master_key_message()
        ))
    }
}

impl Config {
    /// The fields whose values differ between `self` and `other`, in declaration order, by
    /// their names in `Debug` (the configuration file's keys, or close to them:
    /// `store_idle` for `store_idle_seconds`). The secrets `Debug` hides are compared by
    /// value.
    pub fn changed_fields(&self, other: &Config) -> Vec<String> {
        let mut changed: Vec<String> = debug_fields(self)
            .into_iter()
            .zip(debug_fields(other))
            .filter(|(mine, theirs)| mine != theirs)
            .map(|(mine, _)| mine.0)
            .collect();
        let secrets = [
            ("master_key", self.master_key != other.master_key),
            (
                "task_webhook_authorization_header",
                self.task_webhook_authorization_header != other.task_webhook_authorization_header,
            ),
            (
                "experimental_personalization_api_key",
                self.experimental_personalization_api_key
                    != other.experimental_personalization_api_key,
            ),
            ("s3_snapshots", self.s3_snapshots != other.s3_snapshots),
        ];
        for (name, differs) in secrets {
            if differs && !changed.iter().any(|field| field == name) {
                changed.push(name.to_owned());
            }
        }
        changed
    }
}

/// The top-level fields of `config`'s pretty `Debug`, as (name, value text) in declaration
/// order; a value spanning several lines is joined into one text.
fn debug_fields(config: &Config) -> Vec<(String, String)> {
    let text = format!("{config:#?}");
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines().skip(1) {
        let field = line
            .strip_prefix(DEBUG_FIELD_INDENT)
            .filter(|rest| !rest.starts_with(' '))
            .and_then(|rest| rest.split_once(": "));
        match (field, fields.last_mut()) {
            (Some((name, value)), _) => fields.push((name.to_owned(), value.to_owned())),
            (None, Some(last)) => last.1.push_str(line),
            (None, None) => {}
        }
    }
    fields
}

/// The indentation of a top-level field in a pretty `Debug` of a struct.
const DEBUG_FIELD_INDENT: &str = "    ";

fn s3_snapshot_config(cli: &Cli, cwd: &Path) -> Option<S3SnapshotConfig> {
    // clap's `s3_snapshots` group guarantees the four bucket options come together.
    Some(S3SnapshotConfig {
        bucket_url: cli.s3_bucket_url.clone()?,
        bucket_region: cli.s3_bucket_region.clone()?,
        bucket_name: cli.s3_bucket_name.clone()?,
        snapshot_prefix: cli.s3_snapshot_prefix.clone()?,
        access_key: cli.s3_access_key.clone(),
        secret_key: cli.s3_secret_key.clone(),
        role_arn: cli.experimental_s3_role_arn.clone(),
        web_identity_token_file: cli
            .experimental_s3_web_identity_token_file
            .as_ref()
            .map(|path| cwd.join(path)),
        max_in_flight_parts: cli.experimental_s3_max_in_flight_parts,
        compression_level: cli.experimental_s3_compression_level,
        signature_duration_seconds: cli.experimental_s3_signature_duration_seconds,
        multipart_part_bytes: cli.experimental_s3_multipart_part_size,
    })
}

/// The Hugging Face hub cache that `huggingFace` embedders load models from, as the
/// Hugging Face libraries find it: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `~/.cache/huggingface/hub`. Read when a model is loaded, not at start-up, so the server
/// sees the cache of its environment without a flag of its own.
pub fn hugging_face_hub_cache() -> PathBuf {
    if let Some(cache) = std::env::var_os("HF_HUB_CACHE") {
        return PathBuf::from(cache);
    }
    if let Some(home) = std::env::var_os("HF_HOME") {
        return PathBuf::from(home).join("hub");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    home.join(".cache").join("huggingface").join("hub")
}

/// The Hugging Face hub variables `huggingFace` embedders fetch models by, as the Hugging
/// Face libraries read them: `HF_ENDPOINT` (the hub's address) and `HF_HUB_OFFLINE`, each
/// `None` when unset. Read when a model is fetched, as [`hugging_face_hub_cache`] is.
pub fn hugging_face_hub_variables() -> (Option<String>, Option<String>) {
    let read = |name| std::env::var(name).ok();
    (
        read(HUGGING_FACE_ENDPOINT_VARIABLE),
        read(HUGGING_FACE_OFFLINE_VARIABLE),
    )
}

/// The variable naming another Hugging Face hub (a mirror, or a test's).
pub const HUGGING_FACE_ENDPOINT_VARIABLE: &str = "HF_ENDPOINT";
/// The variable that forbids model downloads.
pub const HUGGING_FACE_OFFLINE_VARIABLE: &str = "HF_HUB_OFFLINE";

/// The variables of the process that configuration reads: `MEILI_*`, `CORESEARCH_*` and
/// `VECTORSTORE_*`. One of them that is not UTF-8 is an error; other variables are skipped.
fn process_variables() -> Result<HashMap<String, String>, ConfigError> {
    let mut variables = HashMap::new();
    for (name, value) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if !["MEILI_", "CORESEARCH_", "VECTORSTORE_"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
        {
            continue;
        }
        let value = value
            .into_string()
            .map_err(|_| ConfigError::VariableNotUnicode {
                name: name.to_owned(),
            })?;
        variables.insert(name.to_owned(), value);
    }
    Ok(variables)
}

/// Meilisearch's suggestion of a fresh master key.
fn generated_master_key_message() -> String {
    match generate_master_key() {
        Ok(key) => format!(
            "We generated a new secure master key for you (you can safely use this token):\n\n\
             >> --master-key {key} <<"
        ),
        Err(error) => format!("(a master key could not be generated: {error})"),
    }
}

/// A random master key: [`GENERATED_MASTER_KEY_BYTES`] bytes from the operating system's
/// cryptographic generator, in URL-safe base64 without padding.
pub fn generate_master_key() -> io::Result<String> {
    use base64::Engine as _;
    let mut bytes = [0_u8; GENERATED_MASTER_KEY_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn variables(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    fn parse(
        arguments: &[&str],
        pairs: &[(&str, &str)],
        cwd: &Path,
    ) -> Result<Config, ConfigError> {
        let mut all = vec!["coresearch"];
        all.extend_from_slice(arguments);
        Config::parse_from(all, &variables(pairs), cwd)
    }

    fn parse_ok(arguments: &[&str], pairs: &[(&str, &str)], cwd: &Path) -> Config {
        match parse(arguments, pairs, cwd) {
            Ok(config) => config,
            Err(error) => panic!("expected a configuration, got: {error}"),
        }
    }

    #[test]
    fn defaults_are_meilisearch_defaults() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(config.db_path, directory.path().join("./data.ms"));
        assert_eq!(config.http_addr, "localhost:7700");
        assert_eq!(config.master_key, None);
        assert_eq!(config.env, Environment::Development);
        assert_eq!(config.http_payload_size_limit, HTTP_PAYLOAD_BYTES_DEFAULT);
        assert_eq!(config.snapshot_dir, directory.path().join("snapshots/"));
        assert_eq!(config.dump_dir, directory.path().join("dumps/"));
        assert_eq!(config.schedule_snapshot, None);
        assert_eq!(config.log_level, LogLevel::Info);
        assert_eq!(config.experimental_logs_mode, LogMode::Human);
        assert_eq!(config.experimental_search_queue_size, 1000);
        assert_eq!(config.experimental_drop_search_after.get(), 60);
        assert_eq!(config.experimental_nb_searches_per_core.get(), 4);
        assert_eq!(config.experimental_max_number_of_batched_tasks, usize::MAX);
        assert_eq!(config.experimental_limit_batched_tasks_total_size, None);
        assert_eq!(config.experimental_embedding_cache_entries, 0);
        assert!(config.experimental_allowed_ip_networks.is_empty());
        assert_eq!(config.s3_snapshots, None);
        assert_eq!(config.config_file_path, None);
        assert!(!config.no_analytics && !config.ssl_require_auth && !config.ssl_tickets);
        assert_eq!(config.cores, available_cores());
        assert_eq!(
            config.shards_per_index,
            default_shards_per_index(config.cores)
        );
        assert_eq!(
            [1, 2, 3, 8].map(default_shards_per_index),
            [1, 1, 3, 8],
            "one shard up to two cores, one per core above"
        );
        assert_eq!(
            config.idle_poll,
            std::time::Duration::from_micros(IDLE_POLL_MICROS_DEFAULT)
        );
        assert!(!config.vectorstore_reader_prefetch_memory);
        let expected_memory = total_memory_bytes().map(|total| total / 3 * 2);
        assert_eq!(config.max_indexing_memory, expected_memory);
        assert!(
            expected_memory.is_some(),
            "/proc/meminfo is readable on Linux"
        );
    }

    #[test]
    fn environment_variables_set_options() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(
            &[],
            &[
                ("MEILI_DB_PATH", "/var/lib/search"),
                ("MEILI_HTTP_ADDR", "0.0.0.0:7701"),
                ("MEILI_MASTER_KEY", "a-master-key-of-enough-bytes"),
                ("MEILI_ENV", "production"),
                ("MEILI_NO_ANALYTICS", "true"),
                ("MEILI_HTTP_PAYLOAD_SIZE_LIMIT", "2GiB"),
                ("MEILI_LOG_LEVEL", "debug"),
                ("MEILI_EXPERIMENTAL_LOGS_MODE", "json"),
                ("MEILI_MAX_INDEXING_MEMORY", "1 GB"),
                ("MEILI_MAX_INDEXING_THREADS", "unlimited"),
                (
                    "MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS",
                    "10.0.0.0/8,192.168.0.0/16",
                ),
                ("CORESEARCH_CORES", "2"),
                ("CORESEARCH_SHARDS_PER_INDEX", "6"),
                ("CORESEARCH_IDLE_POLL_MICROS", "0"),
                ("VECTORSTORE_READER_PREFETCH_MEMORY", "1"),
            ],
            directory.path(),
        );
        assert_eq!(config.db_path, PathBuf::from("/var/lib/search"));
        assert_eq!(config.http_addr, "0.0.0.0:7701");
        assert_eq!(
            config.master_key.as_deref(),
            Some("a-master-key-of-enough-bytes")
        );
        assert_eq!(config.env, Environment::Production);
        assert!(config.no_analytics);
        assert_eq!(config.http_payload_size_limit, 2 * 1024 * 1024 * 1024);
        assert_eq!(config.log_level, LogLevel::Debug);
        assert_eq!(config.experimental_logs_mode, LogMode::Json);
        assert_eq!(config.max_indexing_memory, Some(1_000_000_000));
        assert_eq!(config.max_indexing_threads, None);
        let networks: Vec<String> = config
            .experimental_allowed_ip_networks
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(networks, ["10.0.0.0/8", "192.168.0.0/16"]);
        assert_eq!(config.cores, 2);
        assert_eq!(config.shards_per_index, 6);
        assert!(config.idle_poll.is_zero());
        assert!(config.vectorstore_reader_prefetch_memory);
    }

    #[test]
    fn max_cache_memory_defaults_to_a_share_of_the_machine_and_reads_byte_sizes() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(config.max_cache_memory, default_cache_memory());
        assert!(config.max_cache_memory > 0);
        let config = parse_ok(&["--max-cache-memory", "2 GiB"], &[], directory.path());
        assert_eq!(config.max_cache_memory, 2 << 30);
        let config = parse_ok(
            &[],
            &[("CORESEARCH_MAX_CACHE_MEMORY", "500MB")],
            directory.path(),
        );
        assert_eq!(config.max_cache_memory, 500_000_000);
    }

    #[test]
    fn indexing_cpu_share_defaults_to_a_tenth_and_refuses_more_than_half() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(
            config.indexing_scheduling.cpu_share,
            INDEXING_CPU_SHARE_DEFAULT
        );
        let config = parse_ok(&["--indexing-cpu-share", "25"], &[], directory.path());
        assert_eq!(config.indexing_scheduling.cpu_share, 25);
        let config = parse_ok(
            &[],
            &[("CORESEARCH_INDEXING_CPU_SHARE", "50")],
            directory.path(),
        );
        assert_eq!(config.indexing_scheduling.cpu_share, 50);
        let refused = Config::parse_from(
            ["coresearch", "--indexing-cpu-share", "51"],
            &std::collections::HashMap::new(),
            directory.path(),
        );
        assert!(
            refused.is_err(),
            "more than the executor's own share is refused"
        );
    }

    #[test]
    fn the_indexing_scheduler_policy_defaults_to_batch() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(
            config.indexing_scheduling.scheduler_policy,
            IndexingSchedulerPolicy::Batch
        );
        let config = parse_ok(
            &["--indexing-scheduler-policy", "normal"],
            &[],
            directory.path(),
        );
        assert_eq!(
            config.indexing_scheduling.scheduler_policy,
            IndexingSchedulerPolicy::Normal
        );
        let refused = Config::parse_from(
            ["coresearch", "--indexing-scheduler-policy", "idle"],
            &std::collections::HashMap::new(),
            directory.path(),
        );
        assert!(refused.is_err(), "only the two fair policies");
    }

    #[test]
    fn the_write_visibility_target_defaults_to_half_a_minute_and_zero_means_none() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(
            config.indexing_scheduling.write_visibility_target,
            Some(std::time::Duration::from_secs(30))
        );
        let config = parse_ok(
            &[],
            &[("CORESEARCH_WRITE_VISIBILITY_TARGET_SECONDS", "0")],
            directory.path(),
        );
        assert_eq!(config.indexing_scheduling.write_visibility_target, None);
        let refused = Config::parse_from(
            ["coresearch", "--write-visibility-target-seconds", "86401"],
            &std::collections::HashMap::new(),
            directory.path(),
        );
        assert!(refused.is_err(), "more than a day is refused");
    }

    #[test]
    fn the_indexing_scheduler_slice_defaults_to_a_tenth_of_a_millisecond_and_zero_means_the_kernels()
     {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(
            config.indexing_scheduling.scheduler_slice,
            Some(std::time::Duration::from_micros(100))
        );
        let config = parse_ok(
            &["--indexing-scheduler-slice-micros", "0"],
            &[],
            directory.path(),
        );
        assert_eq!(config.indexing_scheduling.scheduler_slice, None);
    }

    #[test]
    fn documents_per_shard_defaults_and_reads_its_flag_and_variable() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_eq!(config.documents_per_shard, DOCUMENTS_PER_SHARD_DEFAULT);
        let config = parse_ok(&["--documents-per-shard", "0"], &[], directory.path());
        assert_eq!(config.documents_per_shard, 0, "0 turns growth off");
        let config = parse_ok(
            &[],
            &[("CORESEARCH_DOCUMENTS_PER_SHARD", "2500")],
            directory.path(),
        );
        assert_eq!(config.documents_per_shard, 2_500);
    }

    #[test]
    fn flags_override_environment_variables() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(
            &[
                "--http-addr",
                "127.0.0.1:9000",
                "--log-level=TRACE",
                "--cores",
                "3",
            ],
            &[
                ("MEILI_HTTP_ADDR", "0.0.0.0:7701"),
                ("MEILI_LOG_LEVEL", "ERROR"),
                ("CORESEARCH_CORES", "2"),
            ],
            directory.path(),
        );
        assert_eq!(config.http_addr, "127.0.0.1:9000");
        assert_eq!(config.log_level, LogLevel::Trace);
        assert_eq!(config.cores, 3);
        assert_eq!(
            config.shards_per_index, 3,
            "shards per index follows the core count"
        );
    }

    #[test]
    fn boolean_variables_accept_boolish_strings_and_reject_others() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        for (value, expected) in [("true", true), ("1", true), ("YES", true), ("on", true)] {
            let config = parse_ok(&[], &[("MEILI_SSL_TICKETS", value)], directory.path());
            assert_eq!(config.ssl_tickets, expected, "value {value}");
        }
        for value in ["false", "0", "no", "OFF"] {
            let config = parse_ok(&[], &[("MEILI_SSL_TICKETS", value)], directory.path());
            assert!(!config.ssl_tickets, "value {value}");
        }
        let error = parse(&[], &[("MEILI_SSL_TICKETS", "maybe")], directory.path()).unwrap_err();
        assert!(
            matches!(error, ConfigError::VariableInvalid { ref name, .. } if name == "MEILI_SSL_TICKETS")
        );
        assert!(error.to_string().contains("MEILI_SSL_TICKETS"), "{error}");
    }

    #[test]
    fn config_file_has_the_lowest_precedence() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        std::fs::write(
            directory.path().join("config.toml"),
            "db_path = \"from-file.ms\"\nhttp_addr = \"file:1\"\nlog_level = \"WARN\"\n\
             no_analytics = true\nexperimental_search_queue_size = 42\nschedule_snapshot = true\n\
             experimental_allowed_ip_networks = [\"10.0.0.0/8\"]\ncores = 1\n",
        )
        .expect("the value is present");
        let config = parse_ok(
            &["--log-level", "error"],
            &[("MEILI_HTTP_ADDR", "env:2")],
            directory.path(),
        );
        assert_eq!(
            config.config_file_path,
            Some(directory.path().join("./config.toml"))
        );
        assert_eq!(config.db_path, directory.path().join("from-file.ms"));
        assert_eq!(config.http_addr, "env:2", "environment beats the file");
        assert_eq!(config.log_level, LogLevel::Error, "flag beats the file");
        assert!(config.no_analytics);
        assert_eq!(config.experimental_search_queue_size, 42);
        assert_eq!(
            config.schedule_snapshot,
            Some(SNAPSHOT_INTERVAL_DEFAULT_SECONDS)
        );
        assert_eq!(config.experimental_allowed_ip_networks.len(), 1);
        assert_eq!(config.cores, 1);
    }

    #[test]
    fn changed_fields_names_what_differs_secrets_included() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let before = parse_ok(&["--master-key", "one"], &[], directory.path());
        assert!(before.changed_fields(&before.clone()).is_empty());
        let after = parse_ok(
            &[
                "--master-key",
                "two",
                "--log-level",
                "debug",
                "--experimental-allowed-ip-networks",
                "10.0.0.0/8",
                "--store-idle-seconds",
                "7",
            ],
            &[],
            directory.path(),
        );
        assert_eq!(
            before.changed_fields(&after),
            [
                "log_level",
                "experimental_allowed_ip_networks",
                "store_idle",
                "master_key"
            ]
        );
    }

    #[test]
    fn missing_default_config_file_is_ignored_but_a_named_one_is_an_error() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        assert_eq!(parse_ok(&[], &[], directory.path()).config_file_path, None);
        let error = parse(
            &["--config-file-path", "absent.toml"],
            &[],
            directory.path(),
        )
        .unwrap_err();
        assert!(
            matches!(error, ConfigError::ConfigFileUnreadable { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("absent.toml"), "{error}");
        let error = parse(
            &[],
            &[("MEILI_CONFIG_FILE_PATH", "other.toml")],
            directory.path(),
        )
        .unwrap_err();
        assert!(
            matches!(error, ConfigError::ConfigFileUnreadable { .. }),
            "{error}"
        );
    }

    #[test]
    fn config_file_named_by_flag_beats_the_variable() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        std::fs::write(
            directory.path().join("chosen.toml"),
            "http_addr = \"chosen:1\"\n",
        )
        .expect("the value is present");
        let config = parse_ok(
            &["--config-file-path=chosen.toml"],
            &[("MEILI_CONFIG_FILE_PATH", "absent.toml")],
            directory.path(),
        );
        assert_eq!(config.http_addr, "chosen:1");
    }

    #[test]
    fn config_file_rejects_its_own_path_unknown_keys_and_wrong_types() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let file = directory.path().join("config.toml");
        std::fs::write(&file, "config_file_path = \"other.toml\"\n").expect("write succeeds");
        let error = parse(&[], &[], directory.path()).unwrap_err();
        assert!(
            matches!(error, ConfigError::ConfigFileKeyNotSupported { .. }),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("`config_file_path` is not supported"),
            "{error}"
        );

        std::fs::write(&file, "no_such_option = 1\n").expect("write succeeds");
        let error = parse(&[], &[], directory.path()).unwrap_err();
        assert!(
            matches!(error, ConfigError::ConfigFileKeyUnknown { ref key, .. } if key == "no_such_option"),
            "{error}"
        );

        std::fs::write(&file, "no_analytics = \"yes\"\n").expect("write succeeds");
        let error = parse(&[], &[], directory.path()).unwrap_err();
        assert!(
            matches!(error, ConfigError::ConfigFileValueInvalid { .. }),
            "{error}"
        );

        std::fs::write(&file, "db_path = \n").expect("write succeeds");
        let error = parse(&[], &[], directory.path()).unwrap_err();
        assert!(
            matches!(error, ConfigError::ConfigFileInvalid { .. }),
            "{error}"
        );
    }

    #[test]
    fn byte_sizes_parse_decimal_binary_and_plain_bytes() {
        assert_eq!(parse_byte_size("100 MB"), Ok(100_000_000));
        assert_eq!(parse_byte_size("2GiB"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_byte_size("1048576"), Ok(1_048_576));
        assert_eq!(
            parse_byte_size("375 MiB"),
            Ok(S3_MULTIPART_PART_BYTES_DEFAULT)
        );
        assert!(parse_byte_size("lots").is_err());
        assert!(parse_byte_size("-5 MB").is_err());
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(
            &["--http-payload-size-limit", "10 KiB"],
            &[],
            directory.path(),
        );
        assert_eq!(config.http_payload_size_limit, 10 * 1024);
        let error =
            parse(&["--http-payload-size-limit", "big"], &[], directory.path()).unwrap_err();
        assert!(
            error.to_string().contains("--http-payload-size-limit"),
            "{error}"
        );
        assert_eq!(error.exit_code(), 2);
    }

    #[test]
    fn schedule_snapshot_takes_an_optional_interval() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        assert_eq!(parse_ok(&[], &[], cwd).schedule_snapshot, None);
        assert_eq!(
            parse_ok(&["--schedule-snapshot"], &[], cwd).schedule_snapshot,
            Some(SNAPSHOT_INTERVAL_DEFAULT_SECONDS)
        );
        assert_eq!(
            parse_ok(&["--schedule-snapshot", "3600"], &[], cwd).schedule_snapshot,
            Some(3600)
        );
        let from_variable = parse_ok(&[], &[("MEILI_SCHEDULE_SNAPSHOT", "60")], cwd);
        assert_eq!(from_variable.schedule_snapshot, Some(60));
        assert_eq!(
            parse_ok(&[], &[("MEILI_SCHEDULE_SNAPSHOT", "")], cwd).schedule_snapshot,
            None
        );
        assert!(parse(&["--schedule-snapshot", "daily"], &[], cwd).is_err());
    }

    #[test]
    fn log_level_and_mode_are_case_insensitive_and_validated() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        assert_eq!(
            parse_ok(&["--log-level", "wArN"], &[], cwd).log_level,
            LogLevel::Warn
        );
        assert_eq!(
            parse_ok(&["--log-level", "off"], &[], cwd).log_level,
            LogLevel::Off
        );
        let error = parse(&["--log-level", "verbose"], &[], cwd).unwrap_err();
        assert!(error.to_string().contains("verbose"), "{error}");
        let mode = parse_ok(&["--experimental-logs-mode", "Json"], &[], cwd).experimental_logs_mode;
        assert_eq!(mode, LogMode::Json);
        assert!(parse(&["--experimental-logs-mode", "xml"], &[], cwd).is_err());
    }

    #[test]
    fn bad_values_are_refused_with_the_option_named() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        for (arguments, option) in [
            (&["--env", "staging"][..], "--env"),
            (&["--cores", "0"][..], "--cores"),
            (&["--shards-per-index", "0"][..], "--shards-per-index"),
            (
                &["--documents-per-shard", "many"][..],
                "--documents-per-shard",
            ),
            (&["--idle-poll-micros", "1001"][..], "--idle-poll-micros"),
            (
                &["--experimental-drop-search-after", "0"][..],
                "--experimental-drop-search-after",
            ),
            (
                &["--experimental-search-queue-size=-1"][..],
                "--experimental-search-queue-size",
            ),
            (
                &["--task-webhook-url", "not a url"][..],
                "--task-webhook-url",
            ),
            (
                &["--experimental-allowed-ip-networks", "10.0.0.1/8"][..],
                "--experimental-allowed-ip-networks",
            ),
            (
                &["--max-indexing-threads", "many"][..],
                "--max-indexing-threads",
            ),
            (&["--no-such-flag"][..], "--no-such-flag"),
        ] {
            let error = parse(arguments, &[], cwd).unwrap_err();
            assert!(error.to_string().contains(option), "{arguments:?}: {error}");
        }
        let error = parse(&[], &[("MEILI_ENV", "staging")], cwd).unwrap_err();
        assert!(error.to_string().contains("staging"), "{error}");
    }

    #[test]
    fn requires_and_conflicts_rules_hold_across_flags_and_variables() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        let error = parse(&["--ignore-missing-dump"], &[], cwd).unwrap_err();
        assert!(error.to_string().contains("--import-dump"), "{error}");
        assert!(parse(&["--ignore-snapshot-if-db-exists"], &[], cwd).is_err());
        let config = parse_ok(
            &["--ignore-missing-dump"],
            &[("MEILI_IMPORT_DUMP", "a.dump")],
            cwd,
        );
        assert_eq!(config.import_dump, Some(cwd.join("a.dump")));
        assert!(config.ignore_missing_dump);
        let error = parse(
            &["--import-dump", "a.dump", "--import-snapshot", "b.snapshot"],
            &[],
            cwd,
        )
        .unwrap_err();
        assert!(error.to_string().contains("cannot be used with"), "{error}");
    }

    #[test]
    fn the_personalization_key_and_url_come_from_flags_variables_or_defaults() {
        let cwd = Path::new("/srv");
        let defaults = parse_ok(&[], &[], cwd);
        assert_eq!(defaults.experimental_personalization_api_key, None);
        assert_eq!(
            defaults.experimental_personalization_url.as_str(),
            PERSONALIZATION_URL_DEFAULT
        );
        let flags = parse_ok(
            &[
                "--experimental-personalization-api-key",
                "secret",
                "--experimental-personalization-url",
                "http://127.0.0.1:9000/v1/rerank",
            ],
            &[],
            cwd,
        );
        assert_eq!(
            flags.experimental_personalization_api_key.as_deref(),
            Some("secret")
        );
        assert_eq!(
            flags.experimental_personalization_url.as_str(),
            "http://127.0.0.1:9000/v1/rerank"
        );
        assert!(!format!("{flags:?}").contains("secret"));
        let variables = parse_ok(
            &[],
            &[
                ("MEILI_EXPERIMENTAL_PERSONALIZATION_API_KEY", "k"),
                (
                    "CORESEARCH_EXPERIMENTAL_PERSONALIZATION_URL",
                    "https://rerank.example/v2",
                ),
            ],
            cwd,
        );
        assert_eq!(
            variables.experimental_personalization_api_key.as_deref(),
            Some("k")
        );
        assert_eq!(
            variables.experimental_personalization_url.host_str(),
            Some("rerank.example")
        );
    }

    #[test]
    fn a_personalization_url_must_be_http_or_https() {
        let cwd = Path::new("/srv");
        for bad in ["ftp://host/rerank", "not a url", "http://"] {
            let error = parse(&["--experimental-personalization-url", bad], &[], cwd)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("experimental-personalization-url"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn s3_options_come_together_with_one_authentication_method() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        assert!(parse(&["--s3-bucket-url", "https://s3.example"], &[], cwd).is_err());
        let bucket = [
            ("MEILI_S3_BUCKET_URL", "https://s3.example"),
            ("MEILI_S3_BUCKET_REGION", "eu-west-1"),
            ("MEILI_S3_BUCKET_NAME", "snapshots"),
            ("MEILI_S3_SNAPSHOT_PREFIX", "prod/"),
        ];
        assert!(
            parse(&[], &bucket, cwd).is_err(),
            "an authentication method is required"
        );
        let mut with_keys = bucket.to_vec();
        with_keys.extend([
            ("MEILI_S3_ACCESS_KEY", "access"),
            ("MEILI_S3_SECRET_KEY", "secret"),
        ]);
        let config = parse_ok(&[], &with_keys, cwd);
        let refusal = config.check_s3_snapshots().unwrap_err().to_string();
        assert!(
            refusal.contains("S3 snapshots are not supported")
                && refusal.contains("--s3-bucket-url"),
            "{refusal}"
        );
        assert!(parse_ok(&[], &[], cwd).check_s3_snapshots().is_ok());
        let s3 = config.s3_snapshots.expect("the value is present");
        assert_eq!(s3.bucket_name, "snapshots");
        assert_eq!(s3.secret_key.as_deref(), Some("secret"));
        assert_eq!(s3.multipart_part_bytes, S3_MULTIPART_PART_BYTES_DEFAULT);
        assert_eq!(s3.max_in_flight_parts.get(), 10);
        assert_eq!(s3.signature_duration_seconds, 28_800);
        let mut mixed = with_keys.clone();
        mixed.push(("MEILI_EXPERIMENTAL_S3_WEB_IDENTITY_TOKEN_FILE", "token"));
        assert!(
            parse(&[], &mixed, cwd).is_err(),
            "keys conflict with web identity"
        );
        // One authentication method, refused with Meilisearch's (clap's) message.
        let mut both = with_keys.clone();
        both.push(("MEILI_EXPERIMENTAL_S3_ROLE_ARN", "role"));
        let error = parse(&[], &both, cwd).unwrap_err().to_string();
        assert!(
            error.contains(
                "the argument '--s3-access-key <S3_ACCESS_KEY>' cannot be used with \
                 '--experimental-s3-role-arn <EXPERIMENTAL_S3_ROLE_ARN>'"
            ),
            "{error}"
        );
    }

    #[test]
    fn production_refuses_a_missing_or_short_master_key() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        let error = parse(&["--env", "production"], &[], cwd).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, ConfigError::MasterKeyMissing { .. }));
        assert!(message.starts_with("You must provide a master key to secure your instance in a production environment. It can be specified via the MEILI_MASTER_KEY environment variable or the --master-key launch option.\n\nWe generated a new secure master key for you (you can safely use this token):\n\n>> --master-key "), "{message}");
        assert!(message.ends_with(" <<"), "{message}");
        assert_eq!(error.exit_code(), 1);

        let error = parse(
            &["--env", "production"],
            &[("MEILI_MASTER_KEY", "short")],
            cwd,
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(matches!(
            error,
            ConfigError::MasterKeyTooShort { length: 5, .. }
        ));
        assert!(message.starts_with("The master key must be at least 16 bytes in a production environment. The provided key is only 5 bytes.\n\nWe generated"), "{message}");

        let config = parse_ok(
            &["--env", "production", "--master-key", "0123456789abcdef"],
            &[],
            cwd,
        );
        assert_eq!(config.master_key_warning(), None);
    }

    #[test]
    fn development_only_warns_about_a_missing_or_short_master_key() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        let warning = parse_ok(&[], &[], cwd)
            .master_key_warning()
            .expect("master_key_warning succeeds");
        assert!(
            warning.starts_with(" No master key was found."),
            "{warning}"
        );
        assert!(
            warning.contains(" A master key of at least 16 bytes will be required"),
            "{warning}"
        );
        let warning = parse_ok(&["--master-key", "short"], &[], cwd)
            .master_key_warning()
            .expect("the value is present");
        assert!(warning.starts_with(" coresearch started with a master key considered unsafe"));
        assert!(
            warning.ends_with("to use this new and secure master key."),
            "{warning}"
        );
        let long_key = parse_ok(&["--master-key", "0123456789abcdef"], &[], cwd);
        assert_eq!(long_key.master_key_warning(), None);
    }

    #[test]
    fn generated_master_keys_are_random_url_safe_and_long_enough() {
        let first = generate_master_key().expect("generate_master_key succeeds");
        let second = generate_master_key().expect("generate_master_key succeeds");
        assert_ne!(first, second);
        assert_eq!(first.len(), 43);
        assert!(
            first
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }

    #[test]
    fn help_and_version_exit_successfully() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        for flag in ["--help", "--version"] {
            let error = parse(&[flag], &[], directory.path()).unwrap_err();
            assert_eq!(error.exit_code(), 0, "{flag}");
        }
        let help = parse(&["--help"], &[], directory.path())
            .unwrap_err()
            .to_string();
        assert!(help.contains("MEILI_DB_PATH") && help.contains("CORESEARCH_SHARDS_PER_INDEX"));
    }

    #[test]
    fn debug_output_redacts_secrets() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(
            &["--master-key", "do-not-print-me-anywhere"],
            &[],
            directory.path(),
        );
        let debug = format!("{config:?}");
        assert!(!debug.contains("do-not-print-me-anywhere"), "{debug}");
        assert!(debug.contains("<redacted>"));
    }

    macro_rules! assert_debug_names {
        ($config:expr, $($field:ident),+ $(,)?) => {
            let Config { $($field: _),+ } = $config;
            let debug = format!("{:?}", $config);
            $(assert!(
                debug.contains(concat!(" ", stringify!($field), ": ")),
                "{} is missing from {debug}",
                stringify!($field),
            );)+
        };
    }

    /// The struct pattern names every field, so a new field fails to compile here until it is
    /// added to the list, and the assertion then fails until `Config`'s `Debug` prints it.
    #[test]
    fn debug_output_names_every_field() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(&[], &[], directory.path());
        assert_debug_names!(
            &config,
            db_path,
            http_addr,
            master_key,
            env,
            task_webhook_url,
            task_webhook_authorization_header,
            no_analytics,
            http_payload_size_limit,
            ssl_cert_path,
            ssl_key_path,
            ssl_auth_path,
            ssl_ocsp_path,
            ssl_require_auth,
            ssl_resumption,
            ssl_tickets,
            import_snapshot,
            ignore_missing_snapshot,
            ignore_snapshot_if_db_exists,
            snapshot_dir,
            schedule_snapshot,
            import_dump,
            ignore_missing_dump,
            ignore_dump_if_db_exists,
            dump_dir,
            dump_import_child,
            log_level,
            max_indexing_memory,
            max_indexing_threads,
            experimental_contains_filter,
            experimental_enable_metrics,
            experimental_enable_logs_route,
            experimental_logs_mode,
            experimental_search_queue_size,
            experimental_drop_search_after,
            experimental_nb_searches_per_core,
            experimental_dumpless_upgrade,
            experimental_replication_parameters,
            experimental_reduce_indexing_memory_usage,
            experimental_max_number_of_batched_tasks,
            experimental_limit_batched_tasks_total_size,
            experimental_embedding_cache_entries,
            experimental_no_snapshot_compaction,
            experimental_dsr_fuel,
            experimental_no_edition_2024_for_settings,
            experimental_no_edition_2024_for_dumps,
            experimental_personalization_api_key,
            experimental_personalization_url,
            experimental_allowed_ip_networks,
            s3_snapshots,
            config_file_path,
            cores,
            shards_per_index,
            idle_poll,
            vectorstore_reader_prefetch_memory,
            max_open_stores,
            store_idle,
            shutdown_drain_delay,
            max_cache_memory,
            indexing_scheduling,
            documents_per_shard,
            rate_limits,
            otlp_traces,
        );
    }

    #[test]
    fn rate_limits_are_off_by_default_and_come_from_flags_variables_and_the_file() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        assert_eq!(parse_ok(&[], &[], cwd).rate_limits, RateLimits::default());
        let config = parse_ok(
            &["--rate-limit-api-key-requests-per-second", "2.5"],
            &[(
                "CORESEARCH_RATE_LIMIT_TENANT_TOKEN_REQUESTS_PER_SECOND",
                "7",
            )],
            cwd,
        );
        let api_key = config.rate_limits.api_key.expect("an API key limit");
        assert_eq!(api_key.requests_per_second.get(), 2.5);
        assert_eq!(api_key.burst.get(), 3, "one second of requests, rounded up");
        let tenant_token = config
            .rate_limits
            .tenant_token
            .expect("a tenant token limit");
        assert_eq!(
            (
                tenant_token.requests_per_second.get(),
                tenant_token.burst.get()
            ),
            (7.0, 7)
        );
        std::fs::write(
            cwd.join("config.toml"),
            "rate_limit_api_key_requests_per_second = 0.5\nrate_limit_api_key_burst = 4\n",
        )
        .expect("the file is written");
        let api_key = parse_ok(&[], &[], cwd)
            .rate_limits
            .api_key
            .expect("a limit");
        assert_eq!(
            (api_key.requests_per_second.get(), api_key.burst.get()),
            (0.5, 4)
        );
    }

    #[test]
    fn out_of_range_rate_limits_are_refused_with_the_option_named() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        let rate = "--rate-limit-api-key-requests-per-second";
        let burst = "--rate-limit-tenant-token-burst";
        for (arguments, option) in [
            (vec![format!("{rate}=0")], rate),
            (vec![format!("{rate}=-3")], rate),
            (vec![format!("{rate}=fast")], rate),
            (vec![format!("{rate}=1e12")], rate),
            (
                vec![
                    "--rate-limit-tenant-token-requests-per-second=5".to_owned(),
                    format!("{burst}=0"),
                ],
                burst,
            ),
            (
                vec![
                    "--rate-limit-tenant-token-requests-per-second=5".to_owned(),
                    format!("{burst}=99999999999"),
                ],
                burst,
            ),
            // A burst without its rate.
            (
                vec![format!("{burst}=3")],
                "--rate-limit-tenant-token-requests-per-second",
            ),
        ] {
            let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
            let error = parse(&arguments, &[], cwd).unwrap_err();
            assert!(error.to_string().contains(option), "{arguments:?}: {error}");
        }
        std::fs::write(
            cwd.join("config.toml"),
            "rate_limit_api_key_requests_per_second = 1\nrate_limit_api_key_burst = -1\n",
        )
        .expect("the file is written");
        let error = parse(&[], &[], cwd).unwrap_err();
        assert!(
            error.to_string().contains("--rate-limit-api-key-burst"),
            "{error}"
        );
    }

    #[test]
    fn traces_are_off_by_default_and_a_bad_endpoint_or_ratio_is_refused_by_name() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let cwd = directory.path();
        assert_eq!(parse_ok(&[], &[], cwd).otlp_traces, None);
        let settings = parse_ok(
            &[
                "--experimental-otlp-traces-endpoint",
                "http://127.0.0.1:4318",
            ],
            &[("CORESEARCH_EXPERIMENTAL_OTLP_TRACES_SAMPLING_RATIO", "0.25")],
            cwd,
        )
        .otlp_traces
        .expect("tracing is on");
        assert_eq!(settings.endpoint.as_str(), "http://127.0.0.1:4318/");
        assert_eq!(settings.sampling_ratio, 0.25);
        assert_eq!(settings.service_name, OTLP_TRACES_SERVICE_NAME_DEFAULT);
        let endpoint = "--experimental-otlp-traces-endpoint";
        let ratio = "--experimental-otlp-traces-sampling-ratio";
        for (arguments, option) in [
            (vec![format!("{endpoint}=not a url")], endpoint),
            (vec![format!("{endpoint}=ftp://collector")], endpoint),
            (
                vec![format!("{endpoint}=http://c:4318"), format!("{ratio}=1.5")],
                ratio,
            ),
            (vec![format!("{ratio}=0.5")], endpoint),
        ] {
            let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
            let error = parse(&arguments, &[], cwd).unwrap_err();
            assert!(error.to_string().contains(option), "{arguments:?}: {error}");
        }
        std::fs::write(
            cwd.join("config.toml"),
            "experimental_otlp_traces_endpoint = \"https://collector.example:4318/otlp\"\n",
        )
        .expect("the file is written");
        let settings = parse_ok(&[], &[], cwd).otlp_traces.expect("tracing is on");
        assert_eq!(settings.endpoint.path(), "/otlp");
    }

    #[test]
    fn dynamic_search_rule_fuel_comes_from_meilisearch_variables() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let defaults = parse_ok(&[], &[], directory.path());
        assert_eq!(
            defaults.experimental_dsr_fuel,
            RuleFuel {
                max_counted_words: 10,
                max_active_rules: 1_000,
                max_pin_actions: 100,
                word_fuel: 4_096,
            }
        );
        let set = parse_ok(
            &[],
            &[
                ("MEILI_EXPERIMENTAL_DSR_FUEL_MAX_COUNTED_WORDS", "3"),
                ("MEILI_EXPERIMENTAL_DSR_FUEL_WORD_FUEL", "7"),
            ],
            directory.path(),
        );
        assert_eq!(set.experimental_dsr_fuel.max_counted_words, 3);
        assert_eq!(set.experimental_dsr_fuel.word_fuel, 7);
        let refused = parse(
            &[],
            &[("MEILI_EXPERIMENTAL_DSR_FUEL_MAX_COUNTED_WORDS", "300")],
            directory.path(),
        );
        assert!(refused.is_err(), "300 words do not fit a byte");
    }

    #[test]
    fn meminfo_total_is_read_in_kibibytes() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:         1000 kB\n";
        assert_eq!(meminfo_total_bytes(meminfo), Some(24_576_000 * 1024));
        assert_eq!(meminfo_total_bytes("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn a_non_unicode_value_does_not_hide_later_flags() {
        use std::os::unix::ffi::OsStringExt;
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let arguments = vec![
            OsString::from("coresearch"),
            OsString::from("--db-path"),
            OsString::from_vec(vec![b'd', 0xff]),
            OsString::from("--http-addr=flag:1"),
        ];
        let config = Config::parse_from(
            arguments,
            &variables(&[("MEILI_HTTP_ADDR", "env:2")]),
            directory.path(),
        )
        .expect("the value is present");
        assert_eq!(config.http_addr, "flag:1");
    }

    #[test]
    fn relative_paths_resolve_against_the_working_directory() {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let config = parse_ok(
            &["--db-path", "db", "--ssl-cert-path", "/etc/cert.pem"],
            &[],
            directory.path(),
        );
        assert_eq!(config.db_path, directory.path().join("db"));
        assert_eq!(config.ssl_cert_path, Some(PathBuf::from("/etc/cert.pem")));
    }
}
