//! `POST` and `GET /indexes/{index_uid}/similar`: the documents whose vectors are closest to
//! one document's, for one embedder.
//!
//! The document's first embedding is the query vector; the document itself is left out, and
//! so are the documents without a vector. The search is otherwise a semantic search
//! ([`super::hybrid`]) checked and answered as `/search` is, with `invalid_similar_*` codes.
//!
//! Invariants: `id` is a valid document id and the embedder exists before any shard is asked;
//! the answer's keys are Meilisearch's: `hits`, `id`, `processingTimeMs`, `limit`, `offset`,
//! `estimatedTotalHits`, and `performanceDetails` (`search > format`, `search`) when asked.

use std::rc::Rc;
use std::time::Instant;

use deserr::Deserr;
use serde_json::{Map, Value, json};
use shards::documents::document_id::document_id_from_value;
use shards::filter::is_shard_refusal;
use shards::search::VectorQuery;

use super::outcome::SearchOutcome;
use super::parameters::{RankingScoreThreshold, SEARCH_LIMIT_DEFAULT, SearchBody};
use super::prepare::{EngineErrors, PreparedSearch, prepare_with};
use super::ranked::execute_ranked;
use super::response::search_result;
use super::stages::StageTimer;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::{JsonError, Param, QueryError};
use crate::errors::{Code, ResponseError, codes};
use crate::host::documents::DocumentEmbeddings;
use crate::settings::embedder_specs::embedder_distribution;

/// The body of `POST /indexes/{uid}/similar`.
#[derive(Debug, Clone, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct SimilarBody {
    #[deserr(error = JsonError<codes::InvalidSimilarId>)]
    pub id: Value,
    #[deserr(error = JsonError<codes::InvalidSimilarEmbedder>)]
    pub embedder: String,
    #[deserr(default, error = JsonError<codes::InvalidSimilarOffset>)]
    pub offset: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSimilarLimit>)]
    pub limit: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSimilarFilter>)]
    pub filter: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidSimilarAttributesToRetrieve>)]
    pub attributes_to_retrieve: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidSimilarRetrieveVectors>)]
    pub retrieve_vectors: bool,
    #[deserr(default, error = JsonError<codes::InvalidSimilarShowRankingScore>)]
    pub show_ranking_score: bool,
    #[deserr(default, error = JsonError<codes::InvalidSimilarShowRankingScoreDetails>)]
    pub show_ranking_score_details: bool,
    #[deserr(default, error = JsonError<codes::InvalidSimilarShowPerformanceDetails>)]
    pub show_performance_details: bool,
    #[deserr(default, error = JsonError<codes::InvalidSimilarRankingScoreThreshold>)]
    pub ranking_score_threshold: Option<RankingScoreThreshold>,
}

/// The query string of `GET /indexes/{uid}/similar`.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
pub struct SimilarQueryString {
    #[deserr(error = QueryError<codes::InvalidSimilarId>)]
    id: String,
    #[deserr(error = QueryError<codes::InvalidSimilarEmbedder>)]
    embedder: String,
    #[deserr(default, error = QueryError<codes::InvalidSimilarOffset>)]
    offset: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarLimit>)]
    limit: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarFilter>)]
    filter: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarAttributesToRetrieve>)]
    attributes_to_retrieve: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarRetrieveVectors>)]
    retrieve_vectors: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarShowRankingScore>)]
    show_ranking_score: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarShowRankingScoreDetails>)]
    show_ranking_score_details: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarShowPerformanceDetails>)]
    show_performance_details: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSimilarRankingScoreThreshold>)]
    ranking_score_threshold: Option<Param<RankingScoreThreshold>>,
}

impl SimilarQueryString {
    /// The same request as a body (`filter` as JSON when it parses, else as a string).
    pub fn into_body(self) -> SimilarBody {
        let flag = |param: Option<Param<bool>>| param.is_some_and(|flag| flag.0);
        SimilarBody {
            id: Value::String(self.id),
            embedder: self.embedder,
            offset: self.offset.map(|param| param.0),
            limit: self.limit.map(|param| param.0),
            filter: self
                .filter
                .map(|text| serde_json::from_str(&text).unwrap_or(Value::String(text))),
            attributes_to_retrieve: self
                .attributes_to_retrieve
                .map(|text| text.split(',').map(|item| item.trim().to_owned()).collect()),
            retrieve_vectors: flag(self.retrieve_vectors),
            show_ranking_score: flag(self.show_ranking_score),
            show_ranking_score_details: flag(self.show_ranking_score_details),
            show_performance_details: flag(self.show_performance_details),
            ranking_score_threshold: self.ranking_score_threshold.map(|param| param.0),
        }
    }
}

/// The search body the similar request runs as.
fn search_body(similar: &SimilarBody) -> SearchBody {
    let mut body = SearchBody::empty();
    body.offset = similar.offset;
    body.limit = similar.limit;
    body.filter = similar.filter.clone();
    body.attributes_to_retrieve = similar.attributes_to_retrieve.clone();
    body.retrieve_vectors = similar.retrieve_vectors;
    body.show_ranking_score = similar.show_ranking_score;
    body.show_ranking_score_details = similar.show_ranking_score_details;
    body.ranking_score_threshold = similar.ranking_score_threshold;
    body
}

/// `/search` codes of the shared checks, as the similar route names them.
fn similar_code(mut error: ResponseError) -> ResponseError {
    error.code = match error.code {
        Code::InvalidSearchFilter => Code::InvalidSimilarFilter,
        Code::InvalidSearchAttributesToRetrieve => Code::InvalidSimilarAttributesToRetrieve,
        other => other,
    };
    error
}

/// Answers one similar request on index `index_uid`.
pub async fn similar(
    coordinator: &Rc<Coordinator>,
    index_uid: &str,
    similar: SimilarBody,
    features: RuntimeFeatures,
) -> Result<Map<String, Value>, ResponseError> {
    let started = Instant::now();
    let id = checked_id(&similar.id)?;
    let record = coordinator.index(index_uid)?;
    let Some(fields) = record.settings.embedders.get(&similar.embedder) else {
        return Err(ResponseError::new(
            Code::InvalidSimilarEmbedder,
            format!("Cannot find embedder with name `{}`.", similar.embedder),
        ));
    };
    let distribution = embedder_distribution(fields);
    let prepared = prepare_with(
        &record,
        search_body(&similar),
        features,
        coordinator.filter_shards(),
        EngineErrors::Plain,
    )
    .map_err(similar_code)?;
    let (internal_id, embeddings) =
        source_embeddings(coordinator, &record, &id, &similar.embedder).await?;
    let outcome = match embeddings.into_iter().next() {
        Some(vector) => {
            let query = VectorQuery {
                embedder: similar.embedder.clone(),
                vector,
                limit: prepared.offset.saturating_add(prepared.limit),
                candidates: None,
                excluded: Some(internal_id),
                distribution,
                only_with_vectors: true,
                distinct: prepared.distinct.clone(),
            };
            execute_ranked(coordinator, &record, &prepared, Some(query))
                .await
                .map_err(|error| match is_shard_refusal(&error.message) {
                    // Meilisearch gives `_shard` refusals the engine's code here too.
                    true => error,
                    false => similar_code(error),
                })?
        }
        None => SearchOutcome::default(),
    };
    let mut stages = StageTimer::new();
    let result = search_result(&record, &prepared, outcome, 0, "");
    stages.finish("search > format");
    let mut answer = similar_answer(result, id, &similar, &prepared, started);
    if similar.show_performance_details {
        let mut details = stages.into_details();
        details.insert(
            "search".to_owned(),
            Value::String(format!("{:.2?}", started.elapsed())),
        );
        answer.insert("performanceDetails".to_owned(), Value::Object(details));
    }
    Ok(answer)
}

/// The `id` of the request as a document id (`invalid_similar_id` otherwise).
fn checked_id(id: &Value) -> Result<String, ResponseError> {
    document_id_from_value(id).map_err(|_| {
        ResponseError::new(
            Code::InvalidSimilarId,
            "Invalid value at `.id`: the value of `id` is invalid. A document identifier can be of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes.",
        )
    })
}

/// The internal id and embeddings of document `id`, asked of the shard that owns it.
async fn source_embeddings(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    id: &str,
    embedder: &str,
) -> Result<(u32, Vec<Vec<f32>>), ResponseError> {
    let names = record.shard_names();
    let shard = shards::rendezvous::rendezvous_winner_position(&names, id)
        .ok_or_else(|| ResponseError::internal("an index without shards"))?;
    let shard = u32::try_from(shard).map_err(ResponseError::internal)?;
    let request = DocumentEmbeddings {
        external_id: id.to_owned(),
        embedder: embedder.to_owned(),
    };
    coordinator
        .ask_shard(&record.shard_set(), shard, request)
        .await?
        .ok_or_else(|| {
            ResponseError::new(
                Code::NotFoundSimilarId,
                format!("Document `{id}` not found."),
            )
        })
}

/// The answer's keys in Meilisearch's order, taken from a search result.
fn similar_answer(
    result: Map<String, Value>,
    id: String,
    similar: &SimilarBody,
    prepared: &PreparedSearch,
    started: Instant,
) -> Map<String, Value> {
    let mut answer = Map::new();
    answer.insert(
        "hits".to_owned(),
        result.get("hits").cloned().unwrap_or(json!([])),
    );
    answer.insert("id".to_owned(), Value::String(id));
    answer.insert(
        "processingTimeMs".to_owned(),
        json!(started.elapsed().as_millis()),
    );
    answer.insert(
        "limit".to_owned(),
        json!(similar.limit.unwrap_or(SEARCH_LIMIT_DEFAULT)),
    );
    answer.insert("offset".to_owned(), json!(prepared.offset));
    answer.insert(
        "estimatedTotalHits".to_owned(),
        result
            .get("estimatedTotalHits")
            .cloned()
            .unwrap_or(json!(0)),
    );
    answer
}
