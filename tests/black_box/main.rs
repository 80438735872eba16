//! The server's integration tests in one test binary: the black-box tests against the real
//! `coresearch` binary, the API conformance tests and the repository's tidy checks, one
//! module per file. One binary links once, where a binary per file linked fifty-six times in
//! every CI run. Run one file's tests with `cargo test --test black_box <module>::`.

mod browser;
mod common;

mod auth_authenticate;
mod auth_body;
mod auth_index_scope;
mod auth_keys_api;
mod auth_lifecycle;
mod auth_route_matrix;
mod auth_store;
mod auth_tenant_token;
mod chats;
mod conformance_36;
mod dashboard_browser;
mod document_edition;
mod documents_conformance;
mod dumps;
mod dynamic_search_rules;
mod embedder_settings;
mod experimental_features;
mod export;
mod facet_patterns;
mod feature_toggles;
mod federation_conformance;
mod free_space;
mod full_disk;
mod half_close;
mod hardening_codes;
mod http_api_errors;
mod http_timeouts_and_request_log;
mod hugging_face;
mod instant_meilisearch_browser;
mod js_sdk_regressions;
mod logs_routes;
mod many_indexes;
mod metrics;
mod multimodal_fragments;
mod network;
mod network_100k;
mod network_documents;
mod path_index_uid;
mod personalization;
mod render_template;
mod replication_parameters;
mod search;
mod search_queue;
mod search_relevance;
mod shard_growth;
mod sharded_network;
mod sharding;
mod sigterm_shutdown;
mod snapshots;
mod startup_messages;
mod stats_sizes;
mod streaming_payload;
mod task_queue_compaction;
mod tidy;
mod topology_change;
mod vectors;
mod vectors_rest;
mod webhooks;
mod write_path;
mod write_path_crash;
