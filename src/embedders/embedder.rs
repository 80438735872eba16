//! An embedder ready to embed: texts in, one vector per text out, through the core's
//! [`OutgoingClient`] for remote sources.
//!
//! Invariants: texts are sent in batches of the source's size, up to
//! [`REQUEST_PARALLELISM`] batches in flight at once, and the vectors come back in the
//! texts' order; every vector has the embedder's dimensions once they are
//! known (set, fixed by the model, or measured with one test text, as Meilisearch measures
//! `rest` and `ollama` embedders); nothing blocks the core (all I/O is the client's).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use crate::outgoing::{OutgoingClient, SendOptions};
use crate::runtime::blocking;

use super::config::{EmbedderConfig, Fragments};
use super::error::{
    ConfigurationSource, EmbedError, EmbedErrorKind, Fault, FragmentQuery, NewEmbedderError,
    NewEmbedderErrorKind,
};
use super::fragment::FragmentTemplate;
use super::join::join_in_order;
use super::local_model::{self, LocalModel};
use super::rest::{RestShape, network_error};
use super::{hub, ollama, openai};
use crate::traces::{Span, SpanKind};

/// The text Meilisearch embeds to measure an embedder's dimensions.
pub const DIMENSION_TEST_TEXT: &str = "test";
/// How many chars of a text a user-provided embedder's error quotes.
pub const MANUAL_EMBED_QUOTED_CHARS: usize = 250;
/// How many texts one helper-thread call of a `huggingFace` model embeds: bounds how long
/// a helper thread is held and how much memory one padded batch takes.
pub const LOCAL_MODEL_BATCH_TEXTS: usize = 16;
/// Why a composite embedder cannot hold another one.
const NESTED_COMPOSITE: &str = "a `composite` embedder cannot hold another `composite` embedder";
/// How many requests of one `embed` call are in flight at once (Meilisearch's own
/// request parallelism).
pub const REQUEST_PARALLELISM: usize = 40;
/// Status Ollama answers for a model it has not pulled.
const OLLAMA_MODEL_NOT_FOUND_STATUS: u16 = 404;

/// One embedding source of an embedder.
#[derive(Debug)]
enum Source {
    UserProvided,
    Remote(Box<RestShape>),
    Local(Box<LocalSource>),
    Unsupported(String),
}

/// A `huggingFace` source: its settings, and its model once loaded.
struct LocalSource {
    model: String,
    revision: Option<String>,
    pooling: String,
    loaded: RefCell<Option<Arc<LocalModel>>>,
}

impl std::fmt::Debug for LocalSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LocalSource")
            .field("model", &self.model)
            .field("revision", &self.revision)
            .field("pooling", &self.pooling)
            .finish_non_exhaustive()
    }
}

impl LocalSource {
    /// The model, fetched from the hub through `client` when the cache lacks it, and
    /// loaded on a helper thread the first time (once per process).
    async fn model(&self, client: &OutgoingClient) -> Result<Arc<LocalModel>, NewEmbedderError> {
        if let Some(loaded) = self.loaded.borrow().as_ref() {
            return Ok(Arc::clone(loaded));
        }
        let revision = self.revision.as_deref();
        if !local_model::is_loaded(&self.model, revision, &self.pooling) {
            hub::fetch_missing(client, &self.model, revision).await?;
        }
        let (model, revision, pooling) = (
            self.model.clone(),
            self.revision.clone(),
            self.pooling.clone(),
        );
        let loaded =
            blocking::run(move || local_model::shared(&model, revision.as_deref(), &pooling))
                .await?;
        *self.loaded.borrow_mut() = Some(Arc::clone(&loaded));
        Ok(loaded)
    }

    /// Embeds `texts` on helper threads, [`LOCAL_MODEL_BATCH_TEXTS`] at a time.
    async fn embed(
        &self,
        client: &OutgoingClient,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model = self.model(client).await.map_err(|error| {
            EmbedError::new(EmbedErrorKind::Unsupported(error.to_string()), error.fault)
        })?;
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(LOCAL_MODEL_BATCH_TEXTS) {
            let (model, batch) = (Arc::clone(&model), batch.to_vec());
            let mut span = Span::child("embedder local model", SpanKind::Internal);
            if span.is_recording() {
                span.set_attribute("coresearch.embedder.source", "HuggingFace");
                span.set_attribute("coresearch.embedder.inputs", batch.len() as i64);
            }
            let embedded = span.run(blocking::run(move || model.embed(&batch))).await;
            vectors.extend(embedded?);
        }
        Ok(vectors)
    }
}

/// The parsed fragments of a multimodal `rest` leaf.
#[derive(Debug)]
pub struct LeafFragments {
    /// The indexing fragments, by name (sorted).
    pub indexing: Vec<(String, FragmentTemplate)>,
    /// The search fragments, by name (sorted).
    pub search: Vec<(String, FragmentTemplate)>,
}

/// One source and its dimensions, known or still to measure.
#[derive(Debug)]
struct Leaf {
    source: Source,
    dimensions: Cell<Option<usize>>,
    /// Whether the source is `rest` (the only one `media` can be embedded with).
    is_rest: bool,
    /// The fragments of a `rest` source that has them.
    fragments: Option<LeafFragments>,
}

/// An embedder: the one that embeds documents, and the one that embeds search queries
/// when it differs (a `composite` embedder).
pub struct Embedder {
    indexing: Leaf,
    search: Option<Leaf>,
    client: Rc<OutgoingClient>,
    options: Option<SendOptions>,
}

/// Parses `fragments` (each a fragment's value, by name) rooted at `root`
/// (`.indexingFragments`).
fn parse_fragments(
    fragments: &std::collections::BTreeMap<String, serde_json::Value>,
    root: &str,
) -> Result<Vec<(String, FragmentTemplate)>, NewEmbedderError> {
    fragments
        .iter()
        .map(|(name, value)| {
            FragmentTemplate::new(value.clone())
                .map(|template| (name.clone(), template))
                .map_err(|error| {
                    NewEmbedderError::template(error.parsing_message(&format!("{root}.{name}")))
                })
        })
        .collect()
}

/// The shape and fragments of a `rest` source with fragments, parsed in Meilisearch's order
/// (indexing fragments, `request`, search fragments, `response`).
fn fragment_shape(
    url: &str,
    api_key: Option<&str>,
    headers: std::collections::BTreeMap<String, String>,
    request: serde_json::Value,
    response: serde_json::Value,
    fragments: &Fragments,
) -> Result<(RestShape, LeafFragments), NewEmbedderError> {
    let indexing = parse_fragments(&fragments.indexing, ".indexingFragments")?;
    let request = RestShape::fragment_request(request)?;
    let search = parse_fragments(&fragments.search, ".searchFragments")?;
    let shape = RestShape::with_fragments(url, api_key, headers, request, response)?;
    Ok((shape, LeafFragments { indexing, search }))
}

/// The shape of a `rest` configuration, and its fragments when it has some.
fn rest_shape(
    config: &EmbedderConfig,
) -> Result<(RestShape, Option<LeafFragments>), NewEmbedderError> {
    let EmbedderConfig::Rest {
        url,
        request,
        response,
        headers,
        api_key,
        fragments,
        ..
    } = config
    else {
        return Err(NewEmbedderError {
            kind: NewEmbedderErrorKind::Unsupported("not a `rest` embedder".to_owned()),
            fault: Fault::Bug,
        });
    };
    if fragments.is_empty() {
        let shape = RestShape::new(
            url,
            api_key.as_deref(),
            headers.clone(),
            request.clone(),
            response.clone(),
            ConfigurationSource::User,
        )?;
        return Ok((shape, None));
    }
    let (shape, parsed) = fragment_shape(
        url,
        api_key.as_deref(),
        headers.clone(),
        request.clone(),
        response.clone(),
        fragments,
    )?;
    Ok((shape, Some(parsed)))
}

/// The source and known dimensions of a non-composite configuration.
fn leaf(config: &EmbedderConfig) -> Result<Leaf, NewEmbedderError> {
    let mut parsed_fragments = None;
    let (source, dimensions) = match config {
        EmbedderConfig::UserProvided { dimensions } => (Source::UserProvided, Some(*dimensions)),
        EmbedderConfig::Rest { dimensions, .. } => {
            let (shape, parsed) = rest_shape(config)?;
            parsed_fragments = parsed;
            (Source::Remote(Box::new(shape)), *dimensions)
        }
        EmbedderConfig::OpenAi {
            url,
            api_key,
            model,
            dimensions,
        } => {
            let shape = openai::shape(url, api_key.as_deref(), model, *dimensions)?;
            (
                Source::Remote(Box::new(shape)),
                Some(openai::dimensions(model, *dimensions)),
            )
        }
        EmbedderConfig::Ollama {
            url,
            api_key,
            model,
            dimensions,
        } => (
            Source::Remote(Box::new(ollama::shape(url, api_key.as_deref(), model)?)),
            *dimensions,
        ),
        EmbedderConfig::HuggingFace {
            model,
            revision,
            pooling,
        } => (
            Source::Local(Box::new(LocalSource {
                model: model.clone(),
                revision: revision.clone(),
                pooling: pooling.clone(),
                loaded: RefCell::new(None),
            })),
            None,
        ),
        EmbedderConfig::Composite { .. } => {
            (Source::Unsupported(NESTED_COMPOSITE.to_owned()), None)
        }
    };
    Ok(Leaf {
        source,
        dimensions: Cell::new(dimensions),
        is_rest: matches!(config, EmbedderConfig::Rest { .. }),
        fragments: parsed_fragments,
    })
}

impl Embedder {
    /// The embedder of `config`, calling out through `client`; fails on invalid
    /// `request`/`response` templates or an unsupported Ollama URL.
    pub fn new(
        config: &EmbedderConfig,
        client: Rc<OutgoingClient>,
    ) -> Result<Self, NewEmbedderError> {
        let (indexing, search) = match config {
            EmbedderConfig::Composite { search, indexing } => {
                (leaf(indexing)?, Some(leaf(search)?))
            }
            single => (leaf(single)?, None),
        };
        Ok(Embedder {
            indexing,
            search,
            client,
            options: None,
        })
    }

    /// The same embedder sending its requests with `options` (timeouts, retries).
    pub fn with_options(mut self, options: SendOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// The same embedder with its dimensions known (an index's embedder, whose dimensions
    /// were stated or measured when its settings changed): no test text is embedded before
    /// its first request. Both sides of a composite embedder have the same dimensions.
    pub fn with_known_dimensions(self, dimensions: usize) -> Self {
        self.indexing.dimensions.set(Some(dimensions));
        if let Some(search) = &self.search {
            search.dimensions.set(Some(dimensions));
        }
        self
    }

    /// The dimensions, when known without a test request.
    pub fn dimensions(&self) -> Option<usize> {
        self.indexing.dimensions.get()
    }

    /// How many texts one request carries at most.
    pub fn batch_size(&self) -> usize {
        match &self.indexing.source {
            Source::Remote(shape) => shape.batch_size(),
            Source::Local(_) => LOCAL_MODEL_BATCH_TEXTS,
            Source::UserProvided | Source::Unsupported(_) => 1,
        }
    }

    /// The embedder's dimensions, measured with one test text when not known; a composite
    /// embedder's two sides must agree.
    pub async fn infer_dimensions(&self) -> Result<usize, NewEmbedderError> {
        let indexing = self.leaf_dimensions(&self.indexing).await?;
        let Some(search) = &self.search else {
            return Ok(indexing);
        };
        let search = self.leaf_dimensions(search).await?;
        if search != indexing {
            return Err(NewEmbedderError {
                kind: NewEmbedderErrorKind::Unsupported(format!(
                    "error while generating test embeddings.\n  - the dimensions of embeddings produced at search time and at indexing time don't match.\n  - Search time dimensions: {search}\n  - Indexing time dimensions: {indexing}\n  - Note: Dimensions of embeddings produced by both embedders are required to match."
                )),
                fault: Fault::User,
            });
        }
        Ok(indexing)
    }

    /// Embeds `texts` (rendered documents) in batches; one vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_with(&self.indexing, texts).await
    }

    /// Embeds rendered indexing fragments in batches; one vector per fragment, in order.
    pub async fn embed_fragments(
        &self,
        fragments: &[serde_json::Value],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_values_with(&self.indexing, fragments).await
    }

    /// Embeds a search query with the search side of the embedder: the text itself, or,
    /// with search fragments, the one fragment that renders for it.
    pub async fn embed_search(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let leaf = self.search.as_ref().unwrap_or(&self.indexing);
        if leaf.fragments.is_some() {
            let fragment = search_fragment(leaf, Some(query), None)?;
            return self.embed_one_value(leaf, fragment).await;
        }
        let mut vectors = self.embed_with(leaf, &[query.to_owned()]).await?;
        vectors.pop().ok_or_else(|| {
            EmbedError::new(
                EmbedErrorKind::ResponseEmbeddingCount {
                    expected: 1,
                    got: 0,
                },
                Fault::Runtime,
            )
        })
    }

    /// Embeds a search with `media` (and `q` when given) through the search fragment that
    /// renders for it; only a `rest` embedder with search fragments can.
    pub async fn embed_search_media(
        &self,
        q: Option<&str>,
        media: Option<&serde_json::Value>,
    ) -> Result<Vec<f32>, EmbedError> {
        let leaf = &self.indexing;
        if self.search.is_some() || !leaf.is_rest {
            return Err(EmbedError::new(EmbedErrorKind::MediaNotRest, Fault::User));
        }
        if leaf.fragments.is_none() {
            return Err(EmbedError::new(
                EmbedErrorKind::MediaNotFragment,
                Fault::User,
            ));
        }
        let fragment = search_fragment(leaf, q, media)?;
        self.embed_one_value(leaf, fragment).await
    }

    async fn embed_one_value(
        &self,
        leaf: &Leaf,
        value: serde_json::Value,
    ) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed_values_with(leaf, &[value]).await?;
        vectors.pop().ok_or_else(|| {
            EmbedError::new(
                EmbedErrorKind::ResponseEmbeddingCount {
                    expected: 1,
                    got: 0,
                },
                Fault::Runtime,
            )
        })
    }

    async fn leaf_dimensions(&self, leaf: &Leaf) -> Result<usize, NewEmbedderError> {
        if let Some(dimensions) = leaf.dimensions.get() {
            return Ok(dimensions);
        }
        if let Source::Local(local) = &leaf.source {
            let dimensions = local.model(&self.client).await?.dimensions();
            leaf.dimensions.set(Some(dimensions));
            return Ok(dimensions);
        }
        if leaf
            .fragments
            .as_ref()
            .is_some_and(|fragments| !fragments.indexing.is_empty())
        {
            return Err(NewEmbedderError {
                kind: NewEmbedderErrorKind::CannotInferDimensionsForFragment,
                fault: Fault::User,
            });
        }
        let shape = remote(leaf, DIMENSION_TEST_TEXT)
            .map_err(NewEmbedderError::could_not_determine_dimension)?;
        let mut vectors = self
            .send(shape, &[serde_json::Value::from(DIMENSION_TEST_TEXT)], None)
            .await
            .map_err(NewEmbedderError::could_not_determine_dimension)?;
        let dimensions = vectors.pop().map_or(0, |vector| vector.len());
        leaf.dimensions.set(Some(dimensions));
        Ok(dimensions)
    }

    async fn embed_with(&self, leaf: &Leaf, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        if let Source::Local(local) = &leaf.source {
            return local.embed(&self.client, texts).await;
        }
        let values: Vec<serde_json::Value> = texts
            .iter()
            .cloned()
            .map(serde_json::Value::String)
            .collect();
        self.embed_values_with(leaf, &values).await
    }

    /// Embeds `inputs` (texts or rendered fragments) with the remote source of `leaf`.
    async fn embed_values_with(
        &self,
        leaf: &Leaf,
        inputs: &[serde_json::Value],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let Some(first) = inputs.first() else {
            return Ok(Vec::new());
        };
        let shape = remote(leaf, &quoted_input(first))?;
        if leaf.dimensions.get().is_none() {
            self.leaf_dimensions(leaf)
                .await
                .map_err(|error| match error.kind {
                    NewEmbedderErrorKind::CouldNotDetermineDimension(inner) => inner,
                    other => {
                        EmbedError::new(EmbedErrorKind::Unsupported(other.to_string()), error.fault)
                    }
                })?;
        }
        let batches: Vec<&[serde_json::Value]> = inputs.chunks(shape.batch_size()).collect();
        let mut vectors = Vec::with_capacity(inputs.len());
        for wave in batches.chunks(REQUEST_PARALLELISM) {
            let requests = wave
                .iter()
                .map(|batch| self.send(shape, batch, leaf.dimensions.get()))
                .collect();
            for answer in join_in_order(requests).await {
                vectors.extend(answer?);
            }
        }
        Ok(vectors)
    }

    /// One request for `batch`, its answer checked.
    async fn send(
        &self,
        shape: &RestShape,
        batch: &[serde_json::Value],
        dimensions: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut request = shape.request_values(batch)?;
        if let Some(options) = self.options {
            request = request.options(options);
        }
        let source = shape.source();
        let inputs = batch.len() as i64;
        let answer = crate::traces::client_call(
            "embedder request",
            |span| {
                span.set_attribute("coresearch.embedder.source", format!("{source:?}"));
                span.set_attribute("coresearch.embedder.inputs", inputs);
            },
            self.client.send(request),
        )
        .await
        .map_err(|error| network_error(&error))?;
        let outcome = shape.read_answer(&answer, batch.len(), dimensions);
        match outcome {
            Err(EmbedError {
                kind: EmbedErrorKind::OtherStatusCode(OLLAMA_MODEL_NOT_FOUND_STATUS, body),
                ..
            }) if shape.source() == ConfigurationSource::Ollama => Err(EmbedError::new(
                EmbedErrorKind::OllamaModelNotFound(body),
                Fault::User,
            )),
            other => other,
        }
    }
}

/// A text as a user-provided embedder's error quotes it (a rendered fragment as JSON).
fn quoted_input(input: &serde_json::Value) -> String {
    match input {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The one search fragment of `leaf` that renders for `q` and `media`, or Meilisearch's
/// error when none or several do.
fn search_fragment(
    leaf: &Leaf,
    q: Option<&str>,
    media: Option<&serde_json::Value>,
) -> Result<serde_json::Value, EmbedError> {
    let fragments = leaf
        .fragments
        .as_ref()
        .map_or(&[][..], |fragments| fragments.search.as_slice());
    let mut rendered = fragments
        .iter()
        .filter_map(|(name, template)| Some((name, template.render_search(q, media)?)));
    let query = || FragmentQuery {
        q: q.map(str::to_owned),
        media: media.cloned(),
    };
    let Some((first, fragment)) = rendered.next() else {
        return Err(EmbedError::new(
            EmbedErrorKind::SearchMatchesNoFragment(Box::new(query())),
            Fault::User,
        ));
    };
    if let Some((second, _)) = rendered.next() {
        let matched = (first.clone(), second.clone(), query());
        return Err(EmbedError::new(
            EmbedErrorKind::SearchMatchesMultipleFragments(Box::new(matched)),
            Fault::User,
        ));
    }
    Ok(fragment)
}

/// The REST shape of `leaf`, or the error embedding `text` with it gives.
fn remote<'leaf>(leaf: &'leaf Leaf, text: &str) -> Result<&'leaf RestShape, EmbedError> {
    match &leaf.source {
        Source::Remote(shape) => Ok(shape),
        Source::UserProvided => Err(EmbedError::new(
            EmbedErrorKind::ManualEmbed(text.chars().take(MANUAL_EMBED_QUOTED_CHARS).collect()),
            Fault::User,
        )),
        Source::Local(_) => Err(EmbedError::new(
            EmbedErrorKind::Unsupported("a `huggingFace` source does not send requests".to_owned()),
            Fault::Bug,
        )),
        Source::Unsupported(reason) => Err(EmbedError::new(
            EmbedErrorKind::Unsupported(reason.clone()),
            Fault::User,
        )),
    }
}
