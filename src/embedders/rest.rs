//! The REST embedder's request and answer: the `request` template filled with the texts,
//! sent as a JSON POST with the key and headers, and the embeddings read back along the
//! `response` template. OpenAI and Ollama are this shape with fixed templates.
//!
//! Invariants: a `request` with `["{{text}}", "{{..}}"]` takes a batch of at most
//! [`TEXT_ARRAY_BATCH`] texts, one with `"{{text}}"` exactly one text; the `response`
//! template is repeated exactly when the `request` is; an answer is accepted only with one
//! embedding per text, each of the expected dimensions when they are known.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::outgoing::{Method, OutgoingError, OutgoingRequest, OutgoingResponse};

use super::error::{ConfigurationSource, EmbedError, EmbedErrorKind, Fault, NewEmbedderError};
use super::extract::extract;
use super::injectable::InjectableTemplate;

/// Where the texts go in a `request` template.
pub const REQUEST_PLACEHOLDER: &str = "{{text}}";
/// Where rendered fragments go in the `request` template of an embedder with fragments.
pub const REQUEST_FRAGMENT_PLACEHOLDER: &str = "{{fragment}}";
/// Where the embeddings are in a `response` template.
pub const RESPONSE_PLACEHOLDER: &str = "{{embedding}}";
/// The marker after an array's first item that repeats it once per text.
pub const REPEAT_PLACEHOLDER: &str = "{{..}}";
/// How many texts one request carries when the `request` takes a single text.
pub const SINGLE_TEXT_BATCH: usize = 1;
/// How many texts one request carries at most when the `request` takes an array.
pub const TEXT_ARRAY_BATCH: usize = 10;
/// The coding Meilisearch's client accepts, and the outgoing client decodes.
pub const ACCEPTED_ENCODING: &str = "gzip";
/// What an embedding is expected to be, in extraction errors.
const EMBEDDING_DESCRIPTION: &str = "an array of numbers";

/// A REST endpoint and the templates of its request and answer.
#[derive(Debug, Clone)]
pub struct RestShape {
    url: String,
    bearer: Option<String>,
    headers: BTreeMap<String, String>,
    request: InjectableTemplate,
    response: InjectableTemplate,
    source: ConfigurationSource,
}

/// The parsed `request` template of an embedder with fragments (`{{fragment}}` in place
/// of `{{text}}`), or Meilisearch's explanation.
fn fragment_request_template(request: Value) -> Result<InjectableTemplate, NewEmbedderError> {
    InjectableTemplate::new(request, REQUEST_FRAGMENT_PLACEHOLDER, REPEAT_PLACEHOLDER).map_err(
        |error| {
            let message = error.message(
                "request",
                REQUEST_FRAGMENT_PLACEHOLDER,
                REPEAT_PLACEHOLDER,
            );
            NewEmbedderError::template(format!(
                "{message}\n  - Note: this template is using fragments, and so expects to contain the placeholder {REQUEST_FRAGMENT_PLACEHOLDER:?} rathern than {REQUEST_PLACEHOLDER:?}"
            ))
        },
    )
}

/// The parsed `request` template, or Meilisearch's explanation.
fn request_template(request: Value) -> Result<InjectableTemplate, NewEmbedderError> {
    InjectableTemplate::new(request, REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER).map_err(|error| {
        let message = error.message("request", REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER);
        NewEmbedderError::template(format!(
            "{message}\n  - Note: this template is using a document template, and so expects to contain the placeholder {REQUEST_PLACEHOLDER:?} rather than {REQUEST_FRAGMENT_PLACEHOLDER:?}"
        ))
    })
}

/// The parsed `response` template, checked against the request's batching.
fn response_template(
    response: Value,
    request: &InjectableTemplate,
) -> Result<InjectableTemplate, NewEmbedderError> {
    let template = InjectableTemplate::new(response, RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER)
        .map_err(|error| {
            NewEmbedderError::template(error.message(
                "response",
                RESPONSE_PLACEHOLDER,
                REPEAT_PLACEHOLDER,
            ))
        })?;
    match (template.is_repeated(), request.is_repeated()) {
        (true, false) => Err(NewEmbedderError::template(
            "in `response`: `response` has multiple embeddings, but `request` has only one text to embed".to_owned(),
        )),
        (false, true) => Err(NewEmbedderError::template(
            "in `response`: `response` has a single embedding, but `request` has multiple texts to embed".to_owned(),
        )),
        _ => Ok(template),
    }
}

/// How the transport failure reads in Meilisearch's `could not reach embedding server`
/// (its HTTP client's wording).
fn network_reason(error: &OutgoingError) -> String {
    match error {
        OutgoingError::Connect { reason, .. } if reason.starts_with("Connection refused") => {
            "io: Connection refused".to_owned()
        }
        OutgoingError::Connect { reason, .. } | OutgoingError::Transfer { reason, .. } => {
            format!("io: {reason}")
        }
        OutgoingError::ConnectTimeout { .. } | OutgoingError::Timeout { .. } => {
            "timeout: global".to_owned()
        }
        OutgoingError::Resolve { .. } => "host not found".to_owned(),
        OutgoingError::InvalidResponse { reason, .. } => format!("protocol: {reason}"),
        OutgoingError::ResponseTooLarge { limit, .. } => {
            format!("the response body is larger than request limit: {limit}")
        }
        OutgoingError::InvalidUrl { .. } | OutgoingError::UnsupportedScheme { .. } => {
            format!("bad uri: {error}")
        }
        OutgoingError::Tls { reason, .. } => format!("rustls: {reason}"),
        OutgoingError::RejectedAddress { .. } => error.to_string(),
    }
}

/// A transport failure as an embedding error.
pub fn network_error(error: &OutgoingError) -> EmbedError {
    EmbedError::new(
        EmbedErrorKind::Network(network_reason(error)),
        Fault::Runtime,
    )
}

impl RestShape {
    /// Checks the templates as Meilisearch does when the embedder is configured.
    pub fn new(
        url: &str,
        api_key: Option<&str>,
        headers: BTreeMap<String, String>,
        request: Value,
        response: Value,
        source: ConfigurationSource,
    ) -> Result<Self, NewEmbedderError> {
        Self::build(
            url,
            api_key,
            headers,
            request_template(request)?,
            response,
            source,
        )
    }

    /// As [`RestShape::new`], for an embedder with fragments: the `request` takes rendered
    /// fragments (`{{fragment}}`), not texts.
    pub fn with_fragments(
        url: &str,
        api_key: Option<&str>,
        headers: BTreeMap<String, String>,
        request: InjectableTemplate,
        response: Value,
    ) -> Result<Self, NewEmbedderError> {
        Self::build(
            url,
            api_key,
            headers,
            request,
            response,
            ConfigurationSource::User,
        )
    }

    /// The `request` template of an embedder with fragments, parsed (see
    /// [`RestShape::with_fragments`]).
    pub fn fragment_request(request: Value) -> Result<InjectableTemplate, NewEmbedderError> {
        fragment_request_template(request)
    }

    fn build(
        url: &str,
        api_key: Option<&str>,
        headers: BTreeMap<String, String>,
        request: InjectableTemplate,
        response: Value,
        source: ConfigurationSource,
    ) -> Result<Self, NewEmbedderError> {
        let response = response_template(response, &request)?;
        Ok(RestShape {
            url: url.to_owned(),
            bearer: api_key.map(|key| format!("Bearer {key}")),
            headers,
            request,
            response,
            source,
        })
    }

    /// Who configured the templates.
    pub fn source(&self) -> ConfigurationSource {
        self.source
    }

    /// How many texts one request carries at most.
    pub fn batch_size(&self) -> usize {
        if self.request.is_repeated() {
            TEXT_ARRAY_BATCH
        } else {
            SINGLE_TEXT_BATCH
        }
    }

    /// The POST for `texts` (no more than [`RestShape::batch_size`], at least one).
    pub fn request(&self, texts: &[String]) -> Result<OutgoingRequest, EmbedError> {
        let values: Vec<Value> = texts.iter().cloned().map(Value::String).collect();
        self.request_values(&values)
    }

    /// The POST for `inputs` — texts, or rendered fragments — (no more than
    /// [`RestShape::batch_size`], at least one).
    pub fn request_values(&self, inputs: &[Value]) -> Result<OutgoingRequest, EmbedError> {
        let body = self.request.inject(inputs.iter().cloned()).ok_or_else(|| {
            EmbedError::new(
                EmbedErrorKind::ResponseEmbeddingCount {
                    expected: inputs.len(),
                    got: 0,
                },
                Fault::Runtime,
            )
        })?;
        let mut request = OutgoingRequest::new(Method::Post, &self.url)
            .map_err(|error| network_error(&error))?
            .header("Accept-Encoding", ACCEPTED_ENCODING);
        if let Some(bearer) = &self.bearer {
            request = request.header("Authorization", bearer);
        }
        // Pretty JSON, as Meilisearch's client sends it.
        let bytes =
            serde_json::to_vec_pretty(&body).unwrap_or_else(|_| body.to_string().into_bytes());
        let mut request = request.json(bytes);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        Ok(request)
    }

    /// The embeddings of an answer to a request for `expected_count` texts, each of
    /// `dimensions` when given.
    pub fn read_answer(
        &self,
        answer: &OutgoingResponse,
        expected_count: usize,
        dimensions: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if !answer.is_success() {
            let body = String::from_utf8(answer.body.clone()).ok();
            return Err(EmbedError::from_status(answer.status, body, self.source));
        }
        let value: Value = serde_json::from_slice(&answer.body).map_err(|error| {
            EmbedError::new(
                EmbedErrorKind::ResponseDeserialization(format!("json: {error}")),
                Fault::Runtime,
            )
        })?;
        let embeddings = extract(&self.response, value).map_err(|error| {
            let message = error.message("response", RESPONSE_PLACEHOLDER, EMBEDDING_DESCRIPTION);
            EmbedError::new(EmbedErrorKind::Extraction(message), Fault::Runtime)
        })?;
        check_embeddings(&embeddings, expected_count, dimensions)?;
        Ok(embeddings)
    }
}

/// One embedding per text, each of `dimensions` when given.
fn check_embeddings(
    embeddings: &[Vec<f32>],
    expected_count: usize,
    dimensions: Option<usize>,
) -> Result<(), EmbedError> {
    if embeddings.len() != expected_count {
        return Err(EmbedError::new(
            EmbedErrorKind::ResponseEmbeddingCount {
                expected: expected_count,
                got: embeddings.len(),
            },
            Fault::Runtime,
        ));
    }
    let Some(expected) = dimensions else {
        return Ok(());
    };
    match embeddings
        .iter()
        .find(|embedding| embedding.len() != expected)
    {
        Some(wrong) => Err(EmbedError::new(
            EmbedErrorKind::UnexpectedDimension {
                expected,
                got: wrong.len(),
            },
            Fault::Runtime,
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use serde_json::json;

    use super::*;

    fn shape(request: Value, response: Value) -> Result<RestShape, NewEmbedderError> {
        RestShape::new(
            "http://127.0.0.1:1/embed",
            Some("key"),
            BTreeMap::from([("X-Extra".to_owned(), "1".to_owned())]),
            request,
            response,
            ConfigurationSource::User,
        )
    }

    pub fn body(request: &OutgoingRequest) -> Value {
        serde_json::from_slice(&request.body).expect("JSON")
    }

    fn answer(status: u16, body: &str) -> OutgoingResponse {
        OutgoingResponse {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_batch_request_carries_its_texts_key_and_headers() {
        let shape = shape(
            json!({"input": ["{{text}}", "{{..}}"], "model": "m"}),
            json!({"data": ["{{embedding}}", "{{..}}"]}),
        )
        .expect("valid");
        assert_eq!(shape.batch_size(), TEXT_ARRAY_BATCH);
        let request = shape
            .request(&["a".to_owned(), "b".to_owned()])
            .expect("built");
        assert_eq!(body(&request), json!({"input": ["a", "b"], "model": "m"}));
        let headers: Vec<_> = request
            .headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}"))
            .collect();
        assert_eq!(
            headers,
            [
                "Accept-Encoding: gzip",
                "Authorization: Bearer key",
                "Content-Type: application/json",
                "X-Extra: 1"
            ]
        );
        let read = shape.read_answer(&answer(200, r#"{"data": [[1, 2], [3, 4]]}"#), 2, Some(2));
        assert_eq!(read.expect("read"), vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn mismatched_templates_are_refused_with_meilisearch_messages() {
        let error = shape(
            json!({"input": "{{text}}"}),
            json!(["{{embedding}}", "{{..}}"]),
        )
        .expect_err("mismatch");
        assert_eq!(
            error.to_string(),
            "user error: in `response`: `response` has multiple embeddings, but `request` has only one text to embed"
        );
        let error =
            shape(json!({"input": "x"}), json!("{{embedding}}")).expect_err("no placeholder");
        assert_eq!(
            error.to_string(),
            "user error: in `request`: \"{{text}}\" not found\n  - Note: this template is using a document template, and so expects to contain the placeholder \"{{text}}\" rather than \"{{fragment}}\""
        );
    }

    #[test]
    fn bad_answers_become_embedding_errors() {
        let shape = shape(
            json!({"input": "{{text}}"}),
            json!({"embedding": "{{embedding}}"}),
        )
        .expect("valid");
        let count = shape.read_answer(&answer(200, r#"{"embedding": [1, 2]}"#), 1, Some(3));
        assert_eq!(
            count.expect_err("dimensions").to_string(),
            "runtime error: was expecting embeddings of dimension `3`, got embeddings of dimensions `2`"
        );
        let malformed = shape.read_answer(&answer(200, "not json"), 1, None);
        assert_eq!(
            malformed.expect_err("malformed").to_string(),
            "runtime error: error deserializing the response body as JSON:\n  - json: expected ident at line 1 column 2"
        );
        let status = shape.read_answer(&answer(503, "busy"), 1, None);
        assert_eq!(
            status.expect_err("status").to_string(),
            "runtime error: received internal error HTTP 503 from embedding server\n  - server replied with `busy`"
        );
    }
}
