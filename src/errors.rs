//! The one error table of the HTTP API: every error code with its HTTP status and error
//! type, and the error object every failure leaves as.
//!
//! The table holds the 278 codes of Meilisearch v1.41 and the six later codes coresearch
//! answers (`index_scoped_api_key_with_global_action`, 1.48.3; the five codes of
//! `POST /render-template`, 1.50), and coresearch's own `too_many_requests` (429, a rate
//! limit; `crate::auth::rate_limit`), sorted by wire name. Each code also
//! has a zero-sized marker type in [`codes`] so request decoders can name a field's code as
//! a type parameter (see `crate::decode`).
//!
//! Invariants:
//! - a [`Code`] maps to exactly one status, one type and one snake_case name;
//! - names are Meilisearch's, including the digit split of `invalid_s_3_snapshot_request`;
//! - an `io_error` message always ends with [`IO_ERROR_MESSAGE_SUFFIX`];
//! - the error object's keys are `message`, `code`, `type`, `link`, in that order, and
//!   `link` is `https://docs.meilisearch.com/errors#<code>`.

use std::fmt;

/// The kind of an error, as the `type` field of the error object names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    InvalidRequest,
    Internal,
    Auth,
    System,
}

impl ErrorType {
    /// The wire name of the type.
    pub fn name(self) -> &'static str {
        match self {
            ErrorType::InvalidRequest => "invalid_request",
            ErrorType::Internal => "internal",
            ErrorType::Auth => "auth",
            ErrorType::System => "system",
        }
    }
}

/// Declares the code table: variant, wire name, HTTP status, error type.
macro_rules! error_codes {
    ($($variant:ident => $name:literal, $status:literal, $kind:ident;)*) => {
        /// Every error code the API can answer with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The snake_case wire name of the code.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// The code whose wire name is `name`.
            pub fn from_name(name: &str) -> Option<Code> {
                match name {
                    $($name => Some(Code::$variant),)*
                    _ => None,
                }
            }

            /// The HTTP status an error with this code is answered with.
            pub fn status(self) -> u16 {
                match self {
                    $(Code::$variant => $status,)*
                }
            }

            /// The error type of this code.
            pub fn error_type(self) -> ErrorType {
                match self {
                    $(Code::$variant => ErrorType::$kind,)*
                }
            }
        }

        /// One zero-sized marker type per code, named like its [`Code`] variant, so a type
        /// can carry a code as a generic parameter (e.g. the decode errors of one field).
        pub mod codes {
            $(
                #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
                pub struct $variant;

                impl super::CodeMarker for $variant {
                    const CODE: super::Code = super::Code::$variant;
                }
            )*
        }
    };
}

/// A type that stands for one [`Code`]; implemented by every marker of [`codes`].
pub trait CodeMarker {
    /// The code this marker stands for.
    const CODE: Code;
}

error_codes! {
    ApiKeyAlreadyExists => "api_key_already_exists", 409, InvalidRequest;
    ApiKeyNotFound => "api_key_not_found", 404, InvalidRequest;
    BadParameter => "bad_parameter", 400, InvalidRequest;
    BadRequest => "bad_request", 400, InvalidRequest;
    BatchNotFound => "batch_not_found", 404, InvalidRequest;
    ChatNotFound => "chat_not_found", 404, InvalidRequest;
    DatabaseSizeLimitReached => "database_size_limit_reached", 500, Internal;
    DocumentNotFound => "document_not_found", 404, InvalidRequest;
    DumpAlreadyProcessing => "dump_already_processing", 409, InvalidRequest;
    DumpNotFound => "dump_not_found", 404, InvalidRequest;
    DumpProcessFailed => "dump_process_failed", 500, Internal;
    DuplicateIndexFound => "duplicate_index_found", 400, InvalidRequest;
    DynamicSearchRuleNotFound => "dynamic_search_rule_not_found", 404, InvalidRequest;
    EditDocumentsByFunctionError => "edit_documents_by_function_error", 400, InvalidRequest;
    FacetSearchDisabled => "facet_search_disabled", 400, InvalidRequest;
    FeatureNotEnabled => "feature_not_enabled", 400, InvalidRequest;
    ImmutableApiKeyActions => "immutable_api_key_actions", 400, InvalidRequest;
    ImmutableApiKeyCreatedAt => "immutable_api_key_created_at", 400, InvalidRequest;
    ImmutableApiKeyExpiresAt => "immutable_api_key_expires_at", 400, InvalidRequest;
    ImmutableApiKeyIndexes => "immutable_api_key_indexes", 400, InvalidRequest;
    ImmutableApiKeyKey => "immutable_api_key_key", 400, InvalidRequest;
    ImmutableApiKeyUid => "immutable_api_key_uid", 400, InvalidRequest;
    ImmutableApiKeyUpdatedAt => "immutable_api_key_updated_at", 400, InvalidRequest;
    ImmutableIndexCreatedAt => "immutable_index_created_at", 400, InvalidRequest;
    ImmutableIndexUpdatedAt => "immutable_index_updated_at", 400, InvalidRequest;
    ImmutableWebhook => "immutable_webhook", 400, InvalidRequest;
    ImmutableWebhookIsEditable => "immutable_webhook_is_editable", 400, InvalidRequest;
    ImmutableWebhookUuid => "immutable_webhook_uuid", 400, InvalidRequest;
    ImportTaskAlreadyReceived => "import_task_already_received", 412, InvalidRequest;
    ImportTaskUnknownRemote => "import_task_unknown_remote", 412, InvalidRequest;
    ImportTaskWithoutNetworkTask => "import_task_without_network_task", 503, InvalidRequest;
    InconsistentDocumentChangeHeaders => "inconsistent_document_change_headers", 400, InvalidRequest;
    IndexAlreadyExists => "index_already_exists", 409, InvalidRequest;
    IndexCreationFailed => "index_creation_failed", 500, Internal;
    IndexNotFound => "index_not_found", 404, InvalidRequest;
    IndexPrimaryKeyAlreadyExists => "index_primary_key_already_exists", 400, InvalidRequest;
    IndexPrimaryKeyMultipleCandidatesFound => "index_primary_key_multiple_candidates_found", 400, InvalidRequest;
    IndexPrimaryKeyNoCandidateFound => "index_primary_key_no_candidate_found", 400, InvalidRequest;
    IndexScopedApiKeyWithGlobalAction => "index_scoped_api_key_with_global_action", 400, InvalidRequest;
    Internal => "internal", 500, Internal;
    InvalidApiKey => "invalid_api_key", 403, Auth;
    InvalidApiKeyActions => "invalid_api_key_actions", 400, InvalidRequest;
    InvalidApiKeyDescription => "invalid_api_key_description", 400, InvalidRequest;
    InvalidApiKeyExpiresAt => "invalid_api_key_expires_at", 400, InvalidRequest;
    InvalidApiKeyIndexes => "invalid_api_key_indexes", 400, InvalidRequest;
    InvalidApiKeyLimit => "invalid_api_key_limit", 400, InvalidRequest;
    InvalidApiKeyName => "invalid_api_key_name", 400, InvalidRequest;
    InvalidApiKeyOffset => "invalid_api_key_offset", 400, InvalidRequest;
    InvalidApiKeyUid => "invalid_api_key_uid", 400, InvalidRequest;
    InvalidBatchUids => "invalid_batch_uids", 400, InvalidRequest;
    InvalidChatCompletionApiKey => "invalid_chat_completion_api_key", 400, InvalidRequest;
    InvalidChatCompletionApiVersion => "invalid_chat_completion_api_version", 400, InvalidRequest;
    InvalidChatCompletionBaseApi => "invalid_chat_completion_base_api", 400, InvalidRequest;
    InvalidChatCompletionDeploymentId => "invalid_chat_completion_deployment_id", 400, InvalidRequest;
    InvalidChatCompletionOrgId => "invalid_chat_completion_org_id", 400, InvalidRequest;
    InvalidChatCompletionPreQueryPrompt => "invalid_chat_completion_pre_query_prompt", 400, InvalidRequest;
    InvalidChatCompletionProjectId => "invalid_chat_completion_project_id", 400, InvalidRequest;
    InvalidChatCompletionPrompts => "invalid_chat_completion_prompts", 400, InvalidRequest;
    InvalidChatCompletionSearchDescriptionPrompt => "invalid_chat_completion_search_description_prompt", 400, InvalidRequest;
    InvalidChatCompletionSearchFilterParamPrompt => "invalid_chat_completion_search_filter_param_prompt", 400, InvalidRequest;
    InvalidChatCompletionSearchIndexUidParamPrompt => "invalid_chat_completion_search_index_uid_param_prompt", 400, InvalidRequest;
    InvalidChatCompletionSearchQueryParamPrompt => "invalid_chat_completion_search_query_param_prompt", 400, InvalidRequest;
    InvalidChatCompletionSource => "invalid_chat_completion_source", 400, InvalidRequest;
    InvalidChatCompletionSystemPrompt => "invalid_chat_completion_system_prompt", 400, InvalidRequest;
    InvalidChatSettingDocumentTemplate => "invalid_chat_setting_document_template", 400, InvalidRequest;
    InvalidContentType => "invalid_content_type", 415, InvalidRequest;
    InvalidDocumentCsvDelimiter => "invalid_document_csv_delimiter", 400, InvalidRequest;
    InvalidDocumentEditionContext => "invalid_document_edition_context", 400, InvalidRequest;
    InvalidDocumentEditionFunctionFilter => "invalid_document_edition_function_filter", 400, InvalidRequest;
    InvalidDocumentFields => "invalid_document_fields", 400, InvalidRequest;
    InvalidDocumentFilter => "invalid_document_filter", 400, InvalidRequest;
    InvalidDocumentGeoField => "invalid_document_geo_field", 400, InvalidRequest;
    InvalidDocumentGeojsonField => "invalid_document_geojson_field", 400, InvalidRequest;
    InvalidDocumentId => "invalid_document_id", 400, InvalidRequest;
    InvalidDocumentIds => "invalid_document_ids", 400, InvalidRequest;
    InvalidDocumentLimit => "invalid_document_limit", 400, InvalidRequest;
    InvalidDocumentOffset => "invalid_document_offset", 400, InvalidRequest;
    InvalidDocumentRetrieveVectors => "invalid_document_retrieve_vectors", 400, InvalidRequest;
    InvalidDocumentSort => "invalid_document_sort", 400, InvalidRequest;
    InvalidDocumentUseNetwork => "invalid_document_use_network", 400, InvalidRequest;
    InvalidDynamicSearchRuleActions => "invalid_dynamic_search_rule_actions", 400, InvalidRequest;
    InvalidDynamicSearchRuleActive => "invalid_dynamic_search_rule_active", 400, InvalidRequest;
    InvalidDynamicSearchRuleConditions => "invalid_dynamic_search_rule_conditions", 400, InvalidRequest;
    InvalidDynamicSearchRuleDescription => "invalid_dynamic_search_rule_description", 400, InvalidRequest;
    InvalidDynamicSearchRuleFilter => "invalid_dynamic_search_rule_filter", 400, InvalidRequest;
    InvalidDynamicSearchRuleFilterActive => "invalid_dynamic_search_rule_filter_active", 400, InvalidRequest;
    InvalidDynamicSearchRuleFilterAttributePatterns => "invalid_dynamic_search_rule_filter_attribute_patterns", 400, InvalidRequest;
    InvalidDynamicSearchRuleFilterQuery => "invalid_dynamic_search_rule_filter_query", 400, InvalidRequest;
    InvalidDynamicSearchRuleLimit => "invalid_dynamic_search_rule_limit", 400, InvalidRequest;
    InvalidDynamicSearchRuleOffset => "invalid_dynamic_search_rule_offset", 400, InvalidRequest;
    InvalidDynamicSearchRulePriority => "invalid_dynamic_search_rule_priority", 400, InvalidRequest;
    InvalidExportApiKey => "invalid_export_api_key", 400, InvalidRequest;
    InvalidExportIndexFilter => "invalid_export_index_filter", 400, InvalidRequest;
    InvalidExportIndexOverrideSettings => "invalid_export_index_override_settings", 400, InvalidRequest;
    InvalidExportIndexesPatterns => "invalid_export_indexes_patterns", 400, InvalidRequest;
    InvalidExportPayloadSize => "invalid_export_payload_size", 400, InvalidRequest;
    InvalidExportUrl => "invalid_export_url", 400, InvalidRequest;
    InvalidFacetSearchExhaustiveFacetCount => "invalid_facet_search_exhaustive_facet_count", 400, InvalidRequest;
    InvalidFacetSearchFacetName => "invalid_facet_search_facet_name", 400, InvalidRequest;
    InvalidFacetSearchName => "invalid_facet_search_name", 400, InvalidRequest;
    InvalidFacetSearchQuery => "invalid_facet_search_query", 400, InvalidRequest;
    InvalidHeaderValue => "invalid_header_value", 400, InvalidRequest;
    InvalidIndexCustomMetadata => "invalid_index_custom_metadata", 400, InvalidRequest;
    InvalidIndexFieldsFilter => "invalid_index_fields_filter", 400, InvalidRequest;
    InvalidIndexFieldsFilterAttributePatterns => "invalid_index_fields_filter_attribute_patterns", 400, InvalidRequest;
    InvalidIndexFieldsFilterDisplayed => "invalid_index_fields_filter_displayed", 400, InvalidRequest;
    InvalidIndexFieldsFilterDistinct => "invalid_index_fields_filter_distinct", 400, InvalidRequest;
    InvalidIndexFieldsFilterFilterable => "invalid_index_fields_filter_filterable", 400, InvalidRequest;
    InvalidIndexFieldsFilterRankingRule => "invalid_index_fields_filter_ranking_rule", 400, InvalidRequest;
    InvalidIndexFieldsFilterSearchable => "invalid_index_fields_filter_searchable", 400, InvalidRequest;
    InvalidIndexFieldsFilterSortable => "invalid_index_fields_filter_sortable", 400, InvalidRequest;
    InvalidIndexLimit => "invalid_index_limit", 400, InvalidRequest;
    InvalidIndexOffset => "invalid_index_offset", 400, InvalidRequest;
    InvalidIndexPrimaryKey => "invalid_index_primary_key", 400, InvalidRequest;
    InvalidIndexUid => "invalid_index_uid", 400, InvalidRequest;
    InvalidMultiSearchDistinct => "invalid_multi_search_distinct", 400, InvalidRequest;
    InvalidMultiSearchFacetOrder => "invalid_multi_search_facet_order", 400, InvalidRequest;
    InvalidMultiSearchFacets => "invalid_multi_search_facets", 400, InvalidRequest;
    InvalidMultiSearchFacetsByIndex => "invalid_multi_search_facets_by_index", 400, InvalidRequest;
    InvalidMultiSearchFederated => "invalid_multi_search_federated", 400, InvalidRequest;
    InvalidMultiSearchFederationOptions => "invalid_multi_search_federation_options", 400, InvalidRequest;
    InvalidMultiSearchMaxValuesPerFacet => "invalid_multi_search_max_values_per_facet", 400, InvalidRequest;
    InvalidMultiSearchMergeFacets => "invalid_multi_search_merge_facets", 400, InvalidRequest;
    InvalidMultiSearchQueryFacets => "invalid_multi_search_query_facets", 400, InvalidRequest;
    InvalidMultiSearchQueryPagination => "invalid_multi_search_query_pagination", 400, InvalidRequest;
    InvalidMultiSearchQueryPersonalization => "invalid_multi_search_query_personalization", 400, InvalidRequest;
    InvalidMultiSearchQueryPosition => "invalid_multi_search_query_position", 400, InvalidRequest;
    InvalidMultiSearchQueryRankingRules => "invalid_multi_search_query_ranking_rules", 400, InvalidRequest;
    InvalidMultiSearchQueryShowPerformanceDetails => "invalid_multi_search_query_show_performance_details", 400, InvalidRequest;
    InvalidMultiSearchRemote => "invalid_multi_search_remote", 400, InvalidRequest;
    InvalidMultiSearchWeight => "invalid_multi_search_weight", 400, InvalidRequest;
    InvalidNetworkLeader => "invalid_network_leader", 400, InvalidRequest;
    InvalidNetworkRemotes => "invalid_network_remotes", 400, InvalidRequest;
    InvalidNetworkSearchApiKey => "invalid_network_search_api_key", 400, InvalidRequest;
    InvalidNetworkSelf => "invalid_network_self", 400, InvalidRequest;
    InvalidNetworkShards => "invalid_network_shards", 400, InvalidRequest;
    InvalidNetworkUrl => "invalid_network_url", 400, InvalidRequest;
    InvalidNetworkWriteApiKey => "invalid_network_write_api_key", 400, InvalidRequest;
    InvalidRenderInput => "invalid_render_input", 400, InvalidRequest;
    InvalidRenderTemplate => "invalid_render_template", 400, InvalidRequest;
    InvalidS3SnapshotParameters => "invalid_s_3_snapshot_parameters", 400, Internal;
    InvalidS3SnapshotRequest => "invalid_s_3_snapshot_request", 400, Internal;
    InvalidSearchAttributesToCrop => "invalid_search_attributes_to_crop", 400, InvalidRequest;
    InvalidSearchAttributesToHighlight => "invalid_search_attributes_to_highlight", 400, InvalidRequest;
    InvalidSearchAttributesToRetrieve => "invalid_search_attributes_to_retrieve", 400, InvalidRequest;
    InvalidSearchAttributesToSearchOn => "invalid_search_attributes_to_search_on", 400, InvalidRequest;
    InvalidSearchCropLength => "invalid_search_crop_length", 400, InvalidRequest;
    InvalidSearchCropMarker => "invalid_search_crop_marker", 400, InvalidRequest;
    InvalidSearchDistinct => "invalid_search_distinct", 400, InvalidRequest;
    InvalidSearchEmbedder => "invalid_search_embedder", 400, InvalidRequest;
    InvalidSearchFacets => "invalid_search_facets", 400, InvalidRequest;
    InvalidSearchFilter => "invalid_search_filter", 400, InvalidRequest;
    InvalidSearchHighlightPostTag => "invalid_search_highlight_post_tag", 400, InvalidRequest;
    InvalidSearchHighlightPreTag => "invalid_search_highlight_pre_tag", 400, InvalidRequest;
    InvalidSearchHitsPerPage => "invalid_search_hits_per_page", 400, InvalidRequest;
    InvalidSearchHybridQuery => "invalid_search_hybrid_query", 400, InvalidRequest;
    InvalidSearchLimit => "invalid_search_limit", 400, InvalidRequest;
    InvalidSearchLocales => "invalid_search_locales", 400, InvalidRequest;
    InvalidSearchMatchingStrategy => "invalid_search_matching_strategy", 400, InvalidRequest;
    InvalidSearchMedia => "invalid_search_media", 400, InvalidRequest;
    InvalidSearchMediaAndVector => "invalid_search_media_and_vector", 400, InvalidRequest;
    InvalidSearchOffset => "invalid_search_offset", 400, InvalidRequest;
    InvalidSearchPage => "invalid_search_page", 400, InvalidRequest;
    InvalidSearchPersonalize => "invalid_search_personalize", 400, InvalidRequest;
    InvalidSearchPersonalizeUserContext => "invalid_search_personalize_user_context", 400, InvalidRequest;
    InvalidSearchQ => "invalid_search_q", 400, InvalidRequest;
    InvalidSearchRankingScoreThreshold => "invalid_search_ranking_score_threshold", 400, InvalidRequest;
    InvalidSearchRetrieveVectors => "invalid_search_retrieve_vectors", 400, InvalidRequest;
    InvalidSearchSemanticRatio => "invalid_search_semantic_ratio", 400, InvalidRequest;
    InvalidSearchShowMatchesPosition => "invalid_search_show_matches_position", 400, InvalidRequest;
    InvalidSearchShowPerformanceDetails => "invalid_search_show_performance_details", 400, InvalidRequest;
    InvalidSearchShowRankingScore => "invalid_search_show_ranking_score", 400, InvalidRequest;
    InvalidSearchShowRankingScoreDetails => "invalid_search_show_ranking_score_details", 400, InvalidRequest;
    InvalidSearchSort => "invalid_search_sort", 400, InvalidRequest;
    InvalidSearchUseNetwork => "invalid_search_use_network", 400, InvalidRequest;
    InvalidSearchVector => "invalid_search_vector", 400, InvalidRequest;
    InvalidSettingsDictionary => "invalid_settings_dictionary", 400, InvalidRequest;
    InvalidSettingsDisplayedAttributes => "invalid_settings_displayed_attributes", 400, InvalidRequest;
    InvalidSettingsDistinctAttribute => "invalid_settings_distinct_attribute", 400, InvalidRequest;
    InvalidSettingsEmbedders => "invalid_settings_embedders", 400, InvalidRequest;
    InvalidSettingsFacetSearch => "invalid_settings_facet_search", 400, InvalidRequest;
    InvalidSettingsFaceting => "invalid_settings_faceting", 400, InvalidRequest;
    InvalidSettingsFilterableAttributes => "invalid_settings_filterable_attributes", 400, InvalidRequest;
    InvalidSettingsForeignKeys => "invalid_settings_foreign_keys", 400, InvalidRequest;
    InvalidSettingsIndexChat => "invalid_settings_index_chat", 400, InvalidRequest;
    InvalidSettingsLocalizedAttributes => "invalid_settings_localized_attributes", 400, InvalidRequest;
    InvalidSettingsNonSeparatorTokens => "invalid_settings_non_separator_tokens", 400, InvalidRequest;
    InvalidSettingsPagination => "invalid_settings_pagination", 400, InvalidRequest;
    InvalidSettingsPrefixSearch => "invalid_settings_prefix_search", 400, InvalidRequest;
    InvalidSettingsProximityPrecision => "invalid_settings_proximity_precision", 400, InvalidRequest;
    InvalidSettingsRankingRules => "invalid_settings_ranking_rules", 400, InvalidRequest;
    InvalidSettingsSearchCutoffMs => "invalid_settings_search_cutoff_ms", 400, InvalidRequest;
    InvalidSettingsSearchableAttributes => "invalid_settings_searchable_attributes", 400, InvalidRequest;
    InvalidSettingsSeparatorTokens => "invalid_settings_separator_tokens", 400, InvalidRequest;
    InvalidSettingsSortableAttributes => "invalid_settings_sortable_attributes", 400, InvalidRequest;
    InvalidSettingsStopWords => "invalid_settings_stop_words", 400, InvalidRequest;
    InvalidSettingsSynonyms => "invalid_settings_synonyms", 400, InvalidRequest;
    InvalidSettingsTypoTolerance => "invalid_settings_typo_tolerance", 400, InvalidRequest;
    InvalidSimilarAttributesToRetrieve => "invalid_similar_attributes_to_retrieve", 400, InvalidRequest;
    InvalidSimilarEmbedder => "invalid_similar_embedder", 400, InvalidRequest;
    InvalidSimilarFilter => "invalid_similar_filter", 400, InvalidRequest;
    InvalidSimilarId => "invalid_similar_id", 400, InvalidRequest;
    InvalidSimilarLimit => "invalid_similar_limit", 400, InvalidRequest;
    InvalidSimilarOffset => "invalid_similar_offset", 400, InvalidRequest;
    InvalidSimilarRankingScoreThreshold => "invalid_similar_ranking_score_threshold", 400, InvalidRequest;
    InvalidSimilarRetrieveVectors => "invalid_similar_retrieve_vectors", 400, InvalidRequest;
    InvalidSimilarShowPerformanceDetails => "invalid_similar_show_performance_details", 400, InvalidRequest;
    InvalidSimilarShowRankingScore => "invalid_similar_show_ranking_score", 400, InvalidRequest;
    InvalidSimilarShowRankingScoreDetails => "invalid_similar_show_ranking_score_details", 400, InvalidRequest;
    InvalidSkipCreation => "invalid_skip_creation", 400, InvalidRequest;
    InvalidState => "invalid_state", 500, Internal;
    InvalidStatsShowInternalDatabaseSizes => "invalid_stats_show_internal_database_sizes", 400, InvalidRequest;
    InvalidStatsSizeFormat => "invalid_stats_size_format", 400, InvalidRequest;
    InvalidStoreFile => "invalid_store_file", 500, Internal;
    InvalidSwapDuplicateIndexFound => "invalid_swap_duplicate_index_found", 400, InvalidRequest;
    InvalidSwapIndexes => "invalid_swap_indexes", 400, InvalidRequest;
    InvalidSwapRename => "invalid_swap_rename", 400, InvalidRequest;
    InvalidTaskAfterEnqueuedAt => "invalid_task_after_enqueued_at", 400, InvalidRequest;
    InvalidTaskAfterFinishedAt => "invalid_task_after_finished_at", 400, InvalidRequest;
    InvalidTaskAfterStartedAt => "invalid_task_after_started_at", 400, InvalidRequest;
    InvalidTaskBeforeEnqueuedAt => "invalid_task_before_enqueued_at", 400, InvalidRequest;
    InvalidTaskBeforeFinishedAt => "invalid_task_before_finished_at", 400, InvalidRequest;
    InvalidTaskBeforeStartedAt => "invalid_task_before_started_at", 400, InvalidRequest;
    InvalidTaskCanceledBy => "invalid_task_canceled_by", 400, InvalidRequest;
    InvalidTaskFrom => "invalid_task_from", 400, InvalidRequest;
    InvalidTaskLimit => "invalid_task_limit", 400, InvalidRequest;
    InvalidTaskReverse => "invalid_task_reverse", 400, InvalidRequest;
    InvalidTaskStatuses => "invalid_task_statuses", 400, InvalidRequest;
    InvalidTaskTypes => "invalid_task_types", 400, InvalidRequest;
    InvalidTaskUids => "invalid_task_uids", 400, InvalidRequest;
    InvalidVectorDimensions => "invalid_vector_dimensions", 400, InvalidRequest;
    InvalidVectorsType => "invalid_vectors_type", 400, InvalidRequest;
    InvalidWebhookHeaders => "invalid_webhook_headers", 400, InvalidRequest;
    InvalidWebhookUrl => "invalid_webhook_url", 400, InvalidRequest;
    InvalidWebhookUuid => "invalid_webhook_uuid", 400, InvalidRequest;
    InvalidWebhooks => "invalid_webhooks", 400, InvalidRequest;
    IoError => "io_error", 422, System;
    MalformedPayload => "malformed_payload", 400, InvalidRequest;
    MaxFieldsLimitExceeded => "max_fields_limit_exceeded", 400, InvalidRequest;
    MissingApiKeyActions => "missing_api_key_actions", 400, InvalidRequest;
    MissingApiKeyExpiresAt => "missing_api_key_expires_at", 400, InvalidRequest;
    MissingApiKeyIndexes => "missing_api_key_indexes", 400, InvalidRequest;
    MissingAuthorizationHeader => "missing_authorization_header", 401, Auth;
    MissingContentType => "missing_content_type", 415, InvalidRequest;
    MissingDocumentEditionFunction => "missing_document_edition_function", 400, InvalidRequest;
    MissingDocumentFilter => "missing_document_filter", 400, InvalidRequest;
    MissingDocumentId => "missing_document_id", 400, InvalidRequest;
    MissingFacetSearchFacetName => "missing_facet_search_facet_name", 400, InvalidRequest;
    MissingIndexUid => "missing_index_uid", 400, InvalidRequest;
    MissingMasterKey => "missing_master_key", 401, Auth;
    MissingNetworkUrl => "missing_network_url", 400, InvalidRequest;
    MissingPayload => "missing_payload", 400, InvalidRequest;
    MissingSearchHybrid => "missing_search_hybrid", 400, InvalidRequest;
    MissingSwapIndexes => "missing_swap_indexes", 400, InvalidRequest;
    MissingTaskFilters => "missing_task_filters", 400, InvalidRequest;
    NetworkVersionMismatch => "network_version_mismatch", 412, InvalidRequest;
    NetworkVersionTooOld => "network_version_too_old", 400, InvalidRequest;
    NoSpaceLeftOnDevice => "no_space_left_on_device", 422, System;
    NotFoundSimilarId => "not_found_similar_id", 400, InvalidRequest;
    NotLeader => "not_leader", 400, InvalidRequest;
    PayloadTooLarge => "payload_too_large", 413, InvalidRequest;
    ReceiveImportFinishedUnknownRemote => "receive_import_finished_unknown_remote", 412, InvalidRequest;
    RemoteBadRequest => "remote_bad_request", 400, InvalidRequest;
    RemoteBadResponse => "remote_bad_response", 502, System;
    RemoteCouldNotSendRequest => "remote_could_not_send_request", 502, System;
    RemoteInvalidApiKey => "remote_invalid_api_key", 403, Auth;
    RemoteRemoteError => "remote_remote_error", 502, System;
    RemoteTimeout => "remote_timeout", 502, System;
    RenderDocumentNotFound => "render_document_not_found", 404, InvalidRequest;
    RequiresEnterpriseEdition => "requires_enterprise_edition", 451, InvalidRequest;
    S3SnapshotServerError => "s_3_snapshot_server_error", 502, Internal;
    TaskFileNotFound => "task_file_not_found", 404, InvalidRequest;
    TaskNotFound => "task_not_found", 404, InvalidRequest;
    TemplateParsingError => "template_parsing_error", 400, InvalidRequest;
    TemplateRenderingError => "template_rendering_error", 400, InvalidRequest;
    TooManyOpenFiles => "too_many_open_files", 422, System;
    TooManyRequests => "too_many_requests", 429, InvalidRequest;
    TooManySearchRequests => "too_many_search_requests", 503, System;
    TooManyVectors => "too_many_vectors", 400, InvalidRequest;
    UnexpectedNetworkPreviousRemotes => "unexpected_network_previous_remotes", 400, InvalidRequest;
    UnimplementedExternalFunctionCalling => "unimplemented_external_function_calling", 501, InvalidRequest;
    UnimplementedMultiChoiceChatCompletions => "unimplemented_multi_choice_chat_completions", 501, InvalidRequest;
    UnimplementedNonStreamingChatCompletions => "unimplemented_non_streaming_chat_completions", 501, InvalidRequest;
    UnprocessedNetworkTask => "unprocessed_network_task", 400, InvalidRequest;
    UnretrievableDocument => "unretrievable_document", 400, Internal;
    UnretrievableErrorCode => "unretrievable_error_code", 400, InvalidRequest;
    UnsupportedMediaType => "unsupported_media_type", 415, InvalidRequest;
    VectorEmbeddingError => "vector_embedding_error", 400, InvalidRequest;
    WebhookNotFound => "webhook_not_found", 404, InvalidRequest;
}

impl Code {
    /// The documentation link of the code.
    pub fn link(self) -> String {
        format!("https://docs.meilisearch.com/errors#{}", self.name())
    }
}

/// Appended to the message of every `io_error`.
pub const IO_ERROR_MESSAGE_SUFFIX: &str = ". This error generally happens when you have no space left on device or when your database doesn't have read or write right.";

/// The HTTP status whose responses carry a `Retry-After` header.
const SERVICE_UNAVAILABLE_STATUS: u16 = 503;

/// The `Retry-After` value sent with every 503 answer.
pub const RETRY_AFTER_SECONDS: u32 = 10;

/// An error as the API answers it: a code and a human message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseError {
    pub code: Code,
    pub message: String,
    /// A status other than the code's own, where Meilisearch answers one (an index missing
    /// inside a multi-search is 400, not 404).
    pub status_override: Option<u16>,
}

impl ResponseError {
    /// An error with `code` and `message`; an `io_error` message gets the explanation
    /// suffix Meilisearch appends to every I/O failure.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if code == Code::IoError {
            message.push_str(IO_ERROR_MESSAGE_SUFFIX);
        }
        ResponseError {
            code,
            message,
            status_override: None,
        }
    }

    /// The same error answered with `status`.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status_override = Some(status);
        self
    }

    /// The same error with `prefix` before its message.
    pub fn prefixed(mut self, prefix: &str) -> Self {
        self.message.insert_str(0, prefix);
        self
    }

    /// The `Retry-After` header value, in seconds, that a response with this error carries:
    /// every 503 answer asks the client to come back later.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        (self.status() == SERVICE_UNAVAILABLE_STATUS).then_some(RETRY_AFTER_SECONDS)
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> u16 {
        self.status_override.unwrap_or_else(|| self.code.status())
    }

    /// The error object as a JSON value (as `remoteErrors` holds it).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "message": self.message,
            "code": self.code.name(),
            "type": self.code.error_type().name(),
            "link": self.code.link(),
        })
    }

    /// The error object, serialized with its keys in wire order.
    pub fn to_json(&self) -> String {
        let object = ErrorObject {
            message: &self.message,
            code: self.code.name(),
            error_type: self.code.error_type().name(),
            link: self.code.link(),
        };
        serde_json::to_string(&object).expect("an error object always serializes")
    }
}

/// Constructors for the errors many routes share, with Meilisearch's exact wording
/// (reference §3.2).
impl ResponseError {
    /// 404 `index_not_found`.
    pub fn index_not_found(index_uid: &str) -> Self {
        Self::new(
            Code::IndexNotFound,
            format!("Index `{index_uid}` not found."),
        )
    }

    /// 409 `index_already_exists`.
    pub fn index_already_exists(index_uid: &str) -> Self {
        Self::new(
            Code::IndexAlreadyExists,
            format!("Index `{index_uid}` already exists."),
        )
    }

    /// 404 `document_not_found`.
    pub fn document_not_found(document_id: &str) -> Self {
        Self::new(
            Code::DocumentNotFound,
            format!("Document `{document_id}` not found."),
        )
    }

    /// 404 `task_not_found`.
    pub fn task_not_found(task_uid: u32) -> Self {
        Self::new(Code::TaskNotFound, format!("Task `{task_uid}` not found."))
    }

    /// 404 `task_file_not_found`: the task has no documents to show.
    pub fn task_file_not_found(task_uid: u32) -> Self {
        Self::new(
            Code::TaskFileNotFound,
            format!(
                "Task `{task_uid}` does not contain any documents. Only `documentAdditionOrUpdate` tasks with the statuses `enqueued` or `processing` contain documents"
            ),
        )
    }

    /// 404 `batch_not_found`.
    pub fn batch_not_found(batch_uid: u32) -> Self {
        Self::new(
            Code::BatchNotFound,
            format!("Batch `{batch_uid}` not found."),
        )
    }

    /// 404 `api_key_not_found`; `key` is the uid or the key string the request named.
    pub fn api_key_not_found(key: &str) -> Self {
        Self::new(Code::ApiKeyNotFound, format!("API key `{key}` not found."))
    }

    /// 409 `api_key_already_exists`.
    pub fn api_key_already_exists(uid: &str) -> Self {
        Self::new(
            Code::ApiKeyAlreadyExists,
            format!("`uid` field value `{uid}` is already an existing API key."),
        )
    }

    /// 401 `missing_authorization_header`.
    pub fn missing_authorization_header() -> Self {
        Self::new(
            Code::MissingAuthorizationHeader,
            "The Authorization header is missing. It must use the bearer authorization method.",
        )
    }

    /// 401 `missing_master_key`.
    pub fn missing_master_key() -> Self {
        Self::new(
            Code::MissingMasterKey,
            "Meilisearch is running without a master key. To access this API endpoint, you must have set a master key at launch.",
        )
    }

    /// 403 `invalid_api_key`, plain variant.
    pub fn invalid_api_key() -> Self {
        Self::new(Code::InvalidApiKey, "The provided API key is invalid.")
    }

    /// 400 `invalid_index_uid` for a uid outside `[A-Za-z0-9_-]{1,400}`.
    pub fn invalid_index_uid(index_uid: &str) -> Self {
        Self::new(
            Code::InvalidIndexUid,
            format!(
                "`{index_uid}` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes."
            ),
        )
    }

    /// 503 `too_many_search_requests` (answered with `Retry-After: 10`).
    pub fn too_many_search_requests(queue_capacity: usize) -> Self {
        Self::new(
            Code::TooManySearchRequests,
            format!(
                "Too many search requests running at the same time: {queue_capacity}. Retry after 10s."
            ),
        )
    }

    /// 400 `feature_not_enabled`: `action` requires the experimental `feature`, documented at
    /// `discussion_link`.
    pub fn feature_not_enabled(action: &str, feature: &str, discussion_link: &str) -> Self {
        Self::new(
            Code::FeatureNotEnabled,
            format!(
                "{action} requires enabling the `{feature}` experimental feature. See {discussion_link}"
            ),
        )
    }

    /// 500 `internal` with the given detail.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(Code::Internal, detail.to_string())
    }
}

impl fmt::Display for ResponseError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} ({})", self.message, self.code.name())
    }
}

impl std::error::Error for ResponseError {}

#[derive(serde::Serialize)]
struct ErrorObject<'a> {
    message: &'a str,
    code: &'static str,
    #[serde(rename = "type")]
    error_type: &'static str,
    link: String,
}

/// The operating-system error numbers that have their own code (reference §3.1 notes).
const ERRNO_TOO_MANY_OPEN_FILES: i32 = 24;
pub const ERRNO_NO_SPACE_LEFT_ON_DEVICE: i32 = 28;

/// The API error for a failed file operation: a full disk and too many open files have their
/// own codes, everything else is an `io_error`.
pub fn io_error(error: &std::io::Error) -> ResponseError {
    let code = match error.raw_os_error() {
        Some(ERRNO_NO_SPACE_LEFT_ON_DEVICE) => Code::NoSpaceLeftOnDevice,
        Some(ERRNO_TOO_MANY_OPEN_FILES) => Code::TooManyOpenFiles,
        _ => Code::IoError,
    };
    ResponseError::new(code, error.to_string())
}

/// Constructors of the task routes' errors (reference §2.5).
impl ResponseError {
    /// 400 `missing_task_filters`; `action` is `cancel` or `delete`.
    pub fn missing_task_filters(action: &str) -> Self {
        Self::new(
            Code::MissingTaskFilters,
            format!(
                "Query parameters to filter the tasks to {action} are missing. Available query parameters are: `uids`, `indexUids`, `statuses`, `types`, `canceledBy`, `beforeEnqueuedAt`, `afterEnqueuedAt`, `beforeStartedAt`, `afterStartedAt`, `beforeFinishedAt`, `afterFinishedAt`."
            ),
        )
    }
}

/// A payload error (a document addition's file, an edition's results) as an API error,
/// with the Meilisearch code the payload layer names (`internal` for a name this table
/// does not know).
pub fn documents_error(error: shards::documents::DocumentsError) -> ResponseError {
    let code = Code::from_name(error.code()).unwrap_or(Code::Internal);
    ResponseError::new(code, error.to_string())
}

/// A shard failure as an API error (`no_space_left_on_device` and the like keep their code;
/// too many fields is `max_fields_limit_exceeded`).
/// A document whose field value does not parse (see `shards::documents::field_values`), as
/// Meilisearch's engine reports it: code `internal`, the value's own serde message.
pub fn document_value_error(error: &serde_json::Error) -> ResponseError {
    shard_error(shards::shard::ShardError::InvalidDocumentValue(
        error.to_string(),
    ))
}

pub fn shard_error(error: shards::shard::ShardError) -> ResponseError {
    use shards::shard::ShardError;
    match error {
        ShardError::Storage(storage_engine::Error::Io(source)) => io_error(&source),
        ShardError::Storage(storage_engine::Error::NoSpace) => io_error(
            &std::io::Error::from_raw_os_error(ERRNO_NO_SPACE_LEFT_ON_DEVICE),
        ),
        ShardError::TooManyFields => ResponseError::new(
            Code::MaxFieldsLimitExceeded,
            ShardError::TooManyFields.to_string(),
        ),
        ShardError::InvalidDocumentGeoField(message) => {
            ResponseError::new(Code::InvalidDocumentGeoField, message)
        }
        ShardError::InvalidDocumentVectors { kind, message } => {
            let code = match kind {
                shards::error::VectorsErrorKind::Dimensions => Code::InvalidVectorDimensions,
                shards::error::VectorsErrorKind::Type => Code::InvalidVectorsType,
                shards::error::VectorsErrorKind::Missing => Code::VectorEmbeddingError,
            };
            ResponseError::new(code, message)
        }
        other => ResponseError::internal(other),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// The number of codes Meilisearch v1.41.0 defines, and the later ones the table holds
    /// (1.50's `invalid_dynamic_search_rule_filter_query`, `invalid_stats_size_format`,
    /// `invalid_stats_show_internal_database_sizes`, the five of `/render-template` and
    /// `invalid_document_use_network`, and one before them).
    const CODE_COUNT_V1_41: usize = 278;
    const CODE_COUNT_LATER: usize = 10;
    /// coresearch's own codes: `too_many_requests` (rate limits).
    const CODE_COUNT_CORESEARCH: usize = 1;

    fn code_named(name: &str) -> Code {
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.name() == name)
            .unwrap_or_else(|| panic!("no code named {name}"))
    }

    #[test]
    fn table_holds_every_meilisearch_code_once() {
        let count = CODE_COUNT_V1_41 + CODE_COUNT_LATER + CODE_COUNT_CORESEARCH;
        assert_eq!(Code::ALL.len(), count);
        let names: HashSet<&str> = Code::ALL.iter().map(|code| code.name()).collect();
        assert_eq!(names.len(), count, "code names must be unique");
    }

    #[test]
    fn table_is_sorted_by_wire_name() {
        let names: Vec<&str> = Code::ALL.iter().map(|code| code.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn names_are_snake_case() {
        for code in Code::ALL {
            let name = code.name();
            assert!(!name.is_empty());
            assert!(!name.starts_with('_') && !name.ends_with('_'), "{name}");
            assert!(!name.contains("__"), "{name}");
            assert!(
                name.bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_'),
                "{name}"
            );
        }
    }

    #[test]
    fn s3_codes_keep_the_digit_split_spelling() {
        assert_eq!(
            Code::InvalidS3SnapshotRequest.name(),
            "invalid_s_3_snapshot_request"
        );
        assert_eq!(
            Code::InvalidS3SnapshotParameters.name(),
            "invalid_s_3_snapshot_parameters"
        );
        assert_eq!(
            Code::S3SnapshotServerError.name(),
            "s_3_snapshot_server_error"
        );
    }

    #[test]
    fn sampled_codes_have_meilisearch_status_and_type() {
        let expected: &[(&str, u16, &str)] = &[
            ("api_key_already_exists", 409, "invalid_request"),
            ("api_key_not_found", 404, "invalid_request"),
            ("database_size_limit_reached", 500, "internal"),
            ("dynamic_search_rule_not_found", 404, "invalid_request"),
            ("import_task_already_received", 412, "invalid_request"),
            ("import_task_without_network_task", 503, "invalid_request"),
            ("index_already_exists", 409, "invalid_request"),
            ("index_not_found", 404, "invalid_request"),
            ("internal", 500, "internal"),
            ("invalid_api_key", 403, "auth"),
            ("invalid_content_type", 415, "invalid_request"),
            ("invalid_s_3_snapshot_parameters", 400, "internal"),
            ("io_error", 422, "system"),
            ("missing_authorization_header", 401, "auth"),
            ("missing_master_key", 401, "auth"),
            ("payload_too_large", 413, "invalid_request"),
            ("remote_bad_response", 502, "system"),
            ("remote_invalid_api_key", 403, "auth"),
            ("requires_enterprise_edition", 451, "invalid_request"),
            ("s_3_snapshot_server_error", 502, "internal"),
            ("too_many_search_requests", 503, "system"),
            ("too_many_requests", 429, "invalid_request"),
            (
                "unimplemented_external_function_calling",
                501,
                "invalid_request",
            ),
            ("unretrievable_document", 400, "internal"),
            ("unsupported_media_type", 415, "invalid_request"),
            ("bad_request", 400, "invalid_request"),
            ("invalid_search_limit", 400, "invalid_request"),
            ("invalid_settings_typo_tolerance", 400, "invalid_request"),
            ("missing_payload", 400, "invalid_request"),
            ("vector_embedding_error", 400, "invalid_request"),
            ("invalid_render_input", 400, "invalid_request"),
            ("invalid_render_template", 400, "invalid_request"),
            ("render_document_not_found", 404, "invalid_request"),
            ("template_parsing_error", 400, "invalid_request"),
            ("template_rendering_error", 400, "invalid_request"),
        ];
        for (name, status, error_type) in expected {
            let code = code_named(name);
            assert_eq!(code.status(), *status, "{name}");
            assert_eq!(code.error_type().name(), *error_type, "{name}");
        }
    }

    #[test]
    fn exactly_50_codes_leave_the_400_invalid_request_default() {
        let special = Code::ALL
            .iter()
            .filter(|code| code.status() != 400 || code.error_type() != ErrorType::InvalidRequest)
            .count();
        assert_eq!(special, 50);
    }

    #[test]
    fn markers_stand_for_their_code() {
        assert_eq!(<codes::BadRequest as CodeMarker>::CODE, Code::BadRequest);
        assert_eq!(
            <codes::InvalidSearchLimit as CodeMarker>::CODE.name(),
            "invalid_search_limit"
        );
        assert_eq!(
            <codes::S3SnapshotServerError as CodeMarker>::CODE.name(),
            "s_3_snapshot_server_error"
        );
    }

    #[test]
    fn error_object_keys_are_in_wire_order() {
        let error = ResponseError::index_not_found("movies");
        assert_eq!(
            error.to_json(),
            r#"{"message":"Index `movies` not found.","code":"index_not_found","type":"invalid_request","link":"https://docs.meilisearch.com/errors#index_not_found"}"#
        );
        assert_eq!(error.status(), 404);
    }

    #[test]
    fn io_error_message_gets_the_explanation_suffix() {
        let error = ResponseError::new(Code::IoError, "No such file or directory (os error 2)");
        assert_eq!(
            error.message,
            "No such file or directory (os error 2). This error generally happens when you have no space left on device or when your database doesn't have read or write right."
        );
        let other = ResponseError::new(Code::Internal, "boom");
        assert_eq!(other.message, "boom");
    }

    #[test]
    fn only_503_answers_ask_to_retry_after() {
        assert_eq!(
            ResponseError::too_many_search_requests(1000).retry_after_seconds(),
            Some(10)
        );
        assert_eq!(ResponseError::invalid_api_key().retry_after_seconds(), None);
    }
}
