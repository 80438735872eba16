//! Why embedding failed, worded as Meilisearch words its `vector_embedding_error`s.
//!
//! Invariants: [`EmbedError`]'s and [`NewEmbedderError`]'s Display is Meilisearch's text
//! (`{fault}: {reason}`) byte for byte, since the messages are API; the API message adds
//! the `Error while generating embeddings: ` prefix ([`EmbedError::to_response_error`]);
//! a server's reply is quoted whole, a key never is.

use std::fmt;

use crate::errors::{Code, ResponseError};

/// The prefix of every embedding error message the API answers.
pub const EMBEDDING_ERROR_PREFIX: &str = "Error while generating embeddings: ";

/// Who is to blame, as Meilisearch says it before each embedding error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    User,
    Runtime,
    Bug,
    Undecided,
}

impl fmt::Display for Fault {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Fault::User => "user error",
            Fault::Runtime => "runtime error",
            Fault::Bug => "coding error",
            Fault::Undecided => "error",
        })
    }
}

/// Which configuration built a REST request: it picks the hints of some messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigurationSource {
    OpenAi,
    Ollama,
    User,
}

/// Why one embedding request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedErrorKind {
    /// A text was given to an embedder whose vectors are user provided.
    ManualEmbed(String),
    /// Ollama answered 404: the model is not pulled.
    OllamaModelNotFound(Option<String>),
    /// The body of a 2xx answer is not JSON (the parser's message).
    ResponseDeserialization(String),
    /// The answer holds another number of embeddings than texts were sent.
    ResponseEmbeddingCount {
        expected: usize,
        got: usize,
    },
    Unauthorized(Option<String>, ConfigurationSource),
    TooManyRequests(Option<String>),
    BadRequest(Option<String>, ConfigurationSource),
    InternalServerError(u16, Option<String>),
    OtherStatusCode(u16, Option<String>),
    /// The server could not be reached (ureq's wording of the transport error).
    Network(String),
    /// The answer does not have the shape of the `response` template.
    Extraction(String),
    UnexpectedDimension {
        expected: usize,
        got: usize,
    },
    /// The source cannot embed on this server.
    Unsupported(String),
    /// A text could not be tokenized (the tokenizer's message).
    Tokenize(String),
    /// The model could not run on a batch (candle's message).
    ModelForward(String),
    /// A search with `media` on an embedder whose source is not `rest`.
    MediaNotRest,
    /// A search with `media` on a `rest` embedder without `searchFragments`.
    MediaNotFragment,
    /// No search fragment renders for the query.
    SearchMatchesNoFragment(Box<FragmentQuery>),
    /// Two search fragments (or more) render for the query: the first two, by name.
    SearchMatchesMultipleFragments(Box<(String, String, FragmentQuery)>),
}

/// The query a search fragment renders: `q` and `media`, when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentQuery {
    pub q: Option<String>,
    pub media: Option<serde_json::Value>,
}

impl fmt::Display for FragmentQuery {
    /// `{"q": …, "media": …}` (absent ones `null`), as a fragment error quotes it.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}",
            serde_json::json!({"q": self.q, "media": self.media})
        )
    }
}

/// A failed embedding: what went wrong and whose fault it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedError {
    pub kind: EmbedErrorKind,
    pub fault: Fault,
}

/// `\n  - {prefix}`{info}`` when there is something to quote.
fn quoted(info: Option<&str>, prefix: &str) -> String {
    info.map(|info| format!("\n  - {prefix}`{info}`"))
        .unwrap_or_default()
}

/// The quoted server reply of a status error.
fn reply(body: &Option<String>) -> String {
    quoted(body.as_deref(), "server replied with ")
}

fn unauthorized(body: &Option<String>, source: ConfigurationSource) -> String {
    let (server, hint) = match source {
        ConfigurationSource::User => ("embedding", ""),
        ConfigurationSource::OpenAi => (
            "OpenAI",
            ", and the `MEILI_OPENAI_API_KEY` and `OPENAI_API_KEY` environment variables",
        ),
        ConfigurationSource::Ollama => ("Ollama", ""),
    };
    format!(
        "could not authenticate against {server} server{}\n  - Hint: Check the `apiKey` parameter in the embedder configuration{hint}",
        reply(body)
    )
}

impl fmt::Display for EmbedErrorKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            EmbedErrorKind::ManualEmbed(text) => format!(
                "attempt to embed the following text in a configuration where embeddings must be user provided:\n  - `{text}`"
            ),
            EmbedErrorKind::OllamaModelNotFound(body) => format!(
                "model not found. Meilisearch will not automatically download models from the Ollama library, please pull the model manually{}",
                reply(body)
            ),
            EmbedErrorKind::ResponseDeserialization(reason) => {
                format!("error deserializing the response body as JSON:\n  - {reason}")
            }
            EmbedErrorKind::ResponseEmbeddingCount { expected, got } => {
                format!("expected a response containing {expected} embeddings, got only {got}")
            }
            EmbedErrorKind::Unauthorized(body, source) => unauthorized(body, *source),
            EmbedErrorKind::TooManyRequests(body) => {
                format!("sent too many requests to embedding server{}", reply(body))
            }
            EmbedErrorKind::BadRequest(body, source) => {
                let hint = match source {
                    ConfigurationSource::User => {
                        "\n  - Hint: check that the `request` in the embedder configuration matches the remote server's API"
                    }
                    _ => "",
                };
                format!(
                    "sent a bad request to embedding server{hint}{}",
                    reply(body)
                )
            }
            EmbedErrorKind::InternalServerError(status, body) => format!(
                "received internal error HTTP {status} from embedding server{}",
                reply(body)
            ),
            EmbedErrorKind::OtherStatusCode(status, body) => format!(
                "received unexpected HTTP {status} from embedding server{}",
                reply(body)
            ),
            EmbedErrorKind::Network(reason) => {
                format!("could not reach embedding server:\n  - {reason}")
            }
            EmbedErrorKind::Extraction(reason) => {
                format!("error extracting embeddings from the response:\n  - {reason}")
            }
            EmbedErrorKind::UnexpectedDimension { expected, got } => format!(
                "was expecting embeddings of dimension `{expected}`, got embeddings of dimensions `{got}`"
            ),
            EmbedErrorKind::Unsupported(reason) => reason.clone(),
            EmbedErrorKind::Tokenize(reason) => format!("could not tokenize:\n  - {reason}"),
            EmbedErrorKind::ModelForward(reason) => format!("could not run model:\n  - {reason}"),
            EmbedErrorKind::MediaNotRest => {
                "`media` requested but the configuration doesn't have source `rest`".to_owned()
            }
            EmbedErrorKind::MediaNotFragment => "`media` requested, and the configuration has source `rest`, but the configuration doesn't have `searchFragments`.".to_owned(),
            EmbedErrorKind::SearchMatchesNoFragment(query) => {
                format!("Query matches no search fragment.\n  - Note: {query}")
            }
            EmbedErrorKind::SearchMatchesMultipleFragments(matched) => {
                let (first, second, query) = matched.as_ref();
                format!(
                    "Query matches multiple search fragments.\n  - Note: First matched fragment `{first}`.\n  - Note: Second matched fragment `{second}`.\n  - Note: {query}"
                )
            }
        };
        formatter.write_str(&text)
    }
}

impl EmbedError {
    /// An error of `kind` blamed on `fault`.
    pub fn new(kind: EmbedErrorKind, fault: Fault) -> Self {
        EmbedError { kind, fault }
    }

    /// The error for a non-2xx answer with `status` and `body`, as Meilisearch classifies
    /// statuses.
    pub fn from_status(status: u16, body: Option<String>, source: ConfigurationSource) -> Self {
        match status {
            401 => Self::new(EmbedErrorKind::Unauthorized(body, source), Fault::User),
            429 => Self::new(EmbedErrorKind::TooManyRequests(body), Fault::Runtime),
            400 => Self::new(EmbedErrorKind::BadRequest(body, source), Fault::User),
            500..=599 => Self::new(
                EmbedErrorKind::InternalServerError(status, body),
                Fault::Runtime,
            ),
            _ => Self::new(
                EmbedErrorKind::OtherStatusCode(status, body),
                Fault::Undecided,
            ),
        }
    }

    /// The API error: `vector_embedding_error` with the Meilisearch message.
    pub fn to_response_error(&self) -> ResponseError {
        ResponseError::new(
            Code::VectorEmbeddingError,
            format!("{EMBEDDING_ERROR_PREFIX}{self}"),
        )
    }
}

impl fmt::Display for EmbedError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.fault, self.kind)
    }
}

impl std::error::Error for EmbedError {}

/// Why an embedder could not be built from its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewEmbedderErrorKind {
    /// The test embedding that measures the dimensions failed.
    CouldNotDetermineDimension(EmbedError),
    /// A `request` or `response` template is invalid (the full explanation).
    CouldNotParseTemplate(String),
    /// An `ollama` URL that ends with neither embedding path.
    OllamaUnsupportedUrl(String),
    /// The source cannot run on this server.
    Unsupported(String),
    /// A `huggingFace` model is not on disk (where it was looked for).
    ModelNotFound(String),
    /// A `huggingFace` model's file could not be fetched from the hub (hf-hub's reason).
    HubFetch(String),
    /// A `huggingFace` model's files are there but cannot be read or loaded (the full
    /// explanation).
    LoadModel(String),
    /// A `rest` embedder with `indexingFragments` states no `dimensions`: a test text
    /// cannot measure them.
    CannotInferDimensionsForFragment,
}

/// A failure to build an embedder and whose fault it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEmbedderError {
    pub kind: NewEmbedderErrorKind,
    pub fault: Fault,
}

impl NewEmbedderError {
    /// A `request`/`response` template error with Meilisearch's explanation.
    pub fn template(message: String) -> Self {
        NewEmbedderError {
            kind: NewEmbedderErrorKind::CouldNotParseTemplate(message),
            fault: Fault::User,
        }
    }

    /// The dimension inference failed with `inner`.
    pub fn could_not_determine_dimension(inner: EmbedError) -> Self {
        NewEmbedderError {
            kind: NewEmbedderErrorKind::CouldNotDetermineDimension(inner),
            fault: Fault::Runtime,
        }
    }

    /// The API error: `vector_embedding_error` with the Meilisearch message.
    pub fn to_response_error(&self) -> ResponseError {
        ResponseError::new(
            Code::VectorEmbeddingError,
            format!("{EMBEDDING_ERROR_PREFIX}{self}"),
        )
    }
}

impl fmt::Display for NewEmbedderErrorKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NewEmbedderErrorKind::CouldNotDetermineDimension(inner) => write!(
                formatter,
                "could not determine model dimensions:\n  - test embedding failed with {inner}"
            ),
            NewEmbedderErrorKind::CouldNotParseTemplate(message) => formatter.write_str(message),
            NewEmbedderErrorKind::OllamaUnsupportedUrl(url) => write!(
                formatter,
                "unsupported Ollama URL.\n  - For `ollama` sources, the URL must end with `/api/embed` or `/api/embeddings`\n  - Got `{url}`"
            ),
            NewEmbedderErrorKind::Unsupported(reason) => formatter.write_str(reason),
            NewEmbedderErrorKind::ModelNotFound(reason) => {
                write!(formatter, "fetching file from HG_HUB failed:\n  - {reason}")
            }
            NewEmbedderErrorKind::HubFetch(reason) => {
                write!(formatter, "fetching file from HG_HUB failed:\n  - {reason}")
            }
            NewEmbedderErrorKind::LoadModel(reason) => formatter.write_str(reason),
            NewEmbedderErrorKind::CannotInferDimensionsForFragment => formatter.write_str(
                "cannot infer `dimensions` for an embedder using `indexingFragments`.\n  - Note: Specify `dimensions` explicitly or don't use `indexingFragments`.",
            ),
        }
    }
}

impl fmt::Display for NewEmbedderError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.fault, self.kind)
    }
}

impl std::error::Error for NewEmbedderError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_errors_read_as_meilisearch_writes_them() {
        let error =
            EmbedError::from_status(500, Some("boom".to_owned()), ConfigurationSource::User);
        assert_eq!(
            error.to_response_error().message,
            "Error while generating embeddings: runtime error: received internal error HTTP 500 from embedding server\n  - server replied with `boom`"
        );
        let error = EmbedError::from_status(400, None, ConfigurationSource::User);
        assert_eq!(
            error.to_string(),
            "user error: sent a bad request to embedding server\n  - Hint: check that the `request` in the embedder configuration matches the remote server's API"
        );
        let error = EmbedError::from_status(404, Some("no".to_owned()), ConfigurationSource::User);
        assert_eq!(
            error.to_string(),
            "error: received unexpected HTTP 404 from embedding server\n  - server replied with `no`"
        );
        let error = EmbedError::from_status(401, None, ConfigurationSource::OpenAi);
        assert!(error.to_string().starts_with(
            "user error: could not authenticate against OpenAI server\n  - Hint: Check the `apiKey`"
        ));
    }

    #[test]
    fn a_dimension_error_wraps_the_test_embedding_error() {
        let inner = EmbedError::new(
            EmbedErrorKind::Network("io: Connection refused".to_owned()),
            Fault::Runtime,
        );
        assert_eq!(
            NewEmbedderError::could_not_determine_dimension(inner).to_string(),
            "runtime error: could not determine model dimensions:\n  - test embedding failed with runtime error: could not reach embedding server:\n  - io: Connection refused"
        );
    }
}
