//! An embedder's stored settings (the JSON map with Meilisearch's field names) read into
//! a typed configuration per source, with Meilisearch's defaults filled in.
//!
//! Invariants: the map was validated when the settings were accepted, so a missing
//! required field here is a stored-state error, reported, never a panic; every default is
//! a named const; a composite's document template comes from the composite, else from its
//! indexing embedder, as Meilisearch reads it.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// The URL an `openAi` embedder calls when none is set.
pub const OPENAI_DEFAULT_URL: &str = "https://api.openai.com/v1/embeddings";
/// The model an `openAi` embedder uses when none is set.
pub const OPENAI_DEFAULT_MODEL: &str = "text-embedding-3-small";
/// The URL an `ollama` embedder calls when none is set (Meilisearch's default, which its
/// `MEILI_OLLAMA_URL` environment variable may change).
pub const OLLAMA_DEFAULT_URL: &str = "http://localhost:11434/api/embeddings";
/// The model an `ollama` embedder uses when none is set.
pub const OLLAMA_DEFAULT_MODEL: &str = "nomic-embed-text";
/// The model a `huggingFace` embedder uses when none is set.
pub const HUGGING_FACE_DEFAULT_MODEL: &str = "BAAI/bge-base-en-v1.5";
/// The revision of the default `huggingFace` model.
pub const HUGGING_FACE_DEFAULT_REVISION: &str = "617ca489d9e86b49b8167676d8220688b99db36e";
/// The pooling of a `huggingFace` embedder when none is set.
pub const HUGGING_FACE_DEFAULT_POOLING: &str = "useModel";
/// The largest rendered document template, in bytes, when none is set (or 0 is).
pub const DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES: usize = 400;
/// The document template used when none is set: every searchable field with a value, one
/// `name: value` line each.
pub const DEFAULT_DOCUMENT_TEMPLATE: &str = "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}";

/// What the embedder calls or runs, per source.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbedderConfig {
    UserProvided {
        dimensions: usize,
    },
    Rest {
        url: String,
        request: Value,
        response: Value,
        headers: BTreeMap<String, String>,
        api_key: Option<String>,
        dimensions: Option<usize>,
        /// The templates of `indexingFragments` and `searchFragments`, by name (both empty:
        /// the embedder renders a document template).
        fragments: Fragments,
    },
    OpenAi {
        url: String,
        api_key: Option<String>,
        model: String,
        dimensions: Option<usize>,
    },
    Ollama {
        url: String,
        api_key: Option<String>,
        model: String,
        dimensions: Option<usize>,
    },
    HuggingFace {
        model: String,
        revision: Option<String>,
        pooling: String,
    },
    Composite {
        search: Box<EmbedderConfig>,
        indexing: Box<EmbedderConfig>,
    },
}

/// The fragments of a multimodal `rest` embedder: each fragment's `value`, by name (sorted).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fragments {
    pub indexing: BTreeMap<String, Value>,
    pub search: BTreeMap<String, Value>,
}

impl Fragments {
    /// The fragments stored in `map` under `indexingFragments` and `searchFragments`.
    fn from_map(map: &Map<String, Value>) -> Self {
        let read = |key: &str| -> BTreeMap<String, Value> {
            let Some(Value::Object(fragments)) = map.get(key) else {
                return BTreeMap::new();
            };
            fragments
                .iter()
                .filter_map(|(name, fragment)| Some((name.clone(), fragment.get("value")?.clone())))
                .collect()
        };
        Fragments {
            indexing: read("indexingFragments"),
            search: read("searchFragments"),
        }
    }

    /// Whether the embedder embeds fragments rather than a document template.
    pub fn is_empty(&self) -> bool {
        self.indexing.is_empty() && self.search.is_empty()
    }
}

/// One embedder's configuration and document template.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderSettings {
    pub config: EmbedderConfig,
    /// The Liquid template rendering a document to the text to embed (sources that embed
    /// documents only).
    pub document_template: Option<String>,
    pub document_template_max_bytes: usize,
    pub binary_quantized: bool,
}

/// A stored embedder map that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn string(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn number(map: &Map<String, Value>, key: &str) -> Option<usize> {
    map.get(key)
        .and_then(Value::as_u64)
        .and_then(|value| usize::try_from(value).ok())
}

fn required<Value>(value: Option<Value>, key: &str) -> Result<Value, ConfigError> {
    value.ok_or_else(|| ConfigError(format!("the embedder has no `{key}`")))
}

fn headers(map: &Map<String, Value>) -> BTreeMap<String, String> {
    let Some(Value::Object(headers)) = map.get("headers") else {
        return BTreeMap::new();
    };
    headers
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_owned())))
        .collect()
}

fn sub_map<'map>(
    map: &'map Map<String, Value>,
    key: &str,
) -> Result<&'map Map<String, Value>, ConfigError> {
    required(map.get(key).and_then(Value::as_object), key)
}

impl EmbedderConfig {
    /// The configuration of a stored embedder map (or of a composite's sub-embedder).
    pub fn from_map(map: &Map<String, Value>) -> Result<Self, ConfigError> {
        let source = required(string(map, "source"), "source")?;
        let api_key = string(map, "apiKey");
        let dimensions = number(map, "dimensions");
        Ok(match source.as_str() {
            "userProvided" => EmbedderConfig::UserProvided {
                dimensions: required(dimensions, "dimensions")?,
            },
            "rest" => EmbedderConfig::Rest {
                url: required(string(map, "url"), "url")?,
                request: required(map.get("request").cloned(), "request")?,
                response: required(map.get("response").cloned(), "response")?,
                headers: headers(map),
                api_key,
                dimensions,
                fragments: Fragments::from_map(map),
            },
            "openAi" => EmbedderConfig::OpenAi {
                url: string(map, "url").unwrap_or_else(|| OPENAI_DEFAULT_URL.to_owned()),
                model: string(map, "model").unwrap_or_else(|| OPENAI_DEFAULT_MODEL.to_owned()),
                api_key,
                dimensions,
            },
            "ollama" => EmbedderConfig::Ollama {
                url: string(map, "url").unwrap_or_else(|| OLLAMA_DEFAULT_URL.to_owned()),
                model: string(map, "model").unwrap_or_else(|| OLLAMA_DEFAULT_MODEL.to_owned()),
                api_key,
                dimensions,
            },
            "huggingFace" => hugging_face(map),
            "composite" => EmbedderConfig::Composite {
                search: Box::new(Self::from_map(sub_map(map, "searchEmbedder")?)?),
                indexing: Box::new(Self::from_map(sub_map(map, "indexingEmbedder")?)?),
            },
            other => return Err(ConfigError(format!("unknown embedder source `{other}`"))),
        })
    }

    /// Whether the source embeds documents, and so renders a document template.
    pub fn embeds_documents(&self) -> bool {
        !matches!(self, EmbedderConfig::UserProvided { .. })
    }

    /// The indexing fragments documents are embedded through (a `rest` embedder's, or a
    /// composite's indexing side's); empty when documents render a document template.
    pub fn indexing_fragments(&self) -> &BTreeMap<String, Value> {
        static NONE: BTreeMap<String, Value> = BTreeMap::new();
        match self {
            EmbedderConfig::Rest { fragments, .. } => &fragments.indexing,
            EmbedderConfig::Composite { indexing, .. } => indexing.indexing_fragments(),
            _ => &NONE,
        }
    }

    /// The search fragments queries are embedded through (a `rest` embedder's, or a
    /// composite's search side's); empty when queries are embedded as text.
    pub fn search_fragments(&self) -> &BTreeMap<String, Value> {
        static NONE: BTreeMap<String, Value> = BTreeMap::new();
        match self {
            EmbedderConfig::Rest { fragments, .. } => &fragments.search,
            EmbedderConfig::Composite { search, .. } => search.search_fragments(),
            _ => &NONE,
        }
    }
}

fn hugging_face(map: &Map<String, Value>) -> EmbedderConfig {
    let model = string(map, "model");
    // The default revision belongs to the default model only.
    let revision = string(map, "revision").or_else(|| {
        model
            .is_none()
            .then(|| HUGGING_FACE_DEFAULT_REVISION.to_owned())
    });
    EmbedderConfig::HuggingFace {
        model: model.unwrap_or_else(|| HUGGING_FACE_DEFAULT_MODEL.to_owned()),
        revision,
        pooling: string(map, "pooling").unwrap_or_else(|| HUGGING_FACE_DEFAULT_POOLING.to_owned()),
    }
}

impl EmbedderSettings {
    /// The settings of a stored embedder map.
    pub fn from_map(map: &Map<String, Value>) -> Result<Self, ConfigError> {
        let config = EmbedderConfig::from_map(map)?;
        let template_owner = match (map.get("documentTemplate"), map.get("indexingEmbedder")) {
            (Some(Value::String(_)), _) | (_, None) => map,
            (_, Some(Value::Object(indexing))) if indexing.contains_key("documentTemplate") => {
                indexing
            }
            _ => map,
        };
        let renders_template = config.embeds_documents() && config.indexing_fragments().is_empty();
        let document_template = renders_template.then(|| {
            string(template_owner, "documentTemplate")
                .unwrap_or_else(|| DEFAULT_DOCUMENT_TEMPLATE.to_owned())
        });
        let document_template_max_bytes = number(template_owner, "documentTemplateMaxBytes")
            .filter(|bytes| *bytes > 0)
            .unwrap_or(DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES);
        Ok(EmbedderSettings {
            config,
            document_template,
            document_template_max_bytes,
            binary_quantized: map
                .get("binaryQuantized")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings(value: Value) -> Result<EmbedderSettings, ConfigError> {
        let Value::Object(map) = value else {
            panic!("an object")
        };
        EmbedderSettings::from_map(&map)
    }

    #[test]
    fn openai_and_ollama_get_meilisearch_defaults() {
        let openai = settings(json!({"source": "openAi", "apiKey": "k"})).expect("valid");
        assert_eq!(
            openai.config,
            EmbedderConfig::OpenAi {
                url: OPENAI_DEFAULT_URL.to_owned(),
                api_key: Some("k".to_owned()),
                model: OPENAI_DEFAULT_MODEL.to_owned(),
                dimensions: None,
            }
        );
        assert_eq!(
            openai.document_template.as_deref(),
            Some(DEFAULT_DOCUMENT_TEMPLATE)
        );
        assert_eq!(openai.document_template_max_bytes, 400);
        let ollama = settings(json!({"source": "ollama", "documentTemplate": "{{doc.a}}", "documentTemplateMaxBytes": 12}))
            .expect("valid");
        assert!(
            matches!(&ollama.config, EmbedderConfig::Ollama { url, model, .. }
            if url == OLLAMA_DEFAULT_URL && model == OLLAMA_DEFAULT_MODEL)
        );
        assert_eq!(
            (
                ollama.document_template.as_deref(),
                ollama.document_template_max_bytes
            ),
            (Some("{{doc.a}}"), 12)
        );
    }

    #[test]
    fn rest_user_provided_and_composite_are_read() {
        let rest = settings(json!({
            "source": "rest", "url": "http://e/x", "request": {"t": "{{text}}"},
            "response": {"e": "{{embedding}}"}, "headers": {"X-A": "b"}, "dimensions": 3
        }))
        .expect("valid");
        assert!(
            matches!(&rest.config, EmbedderConfig::Rest { headers, dimensions: Some(3), .. }
            if headers.get("X-A").map(String::as_str) == Some("b"))
        );
        let manual = settings(json!({"source": "userProvided", "dimensions": 2})).expect("valid");
        assert_eq!(
            manual.config,
            EmbedderConfig::UserProvided { dimensions: 2 }
        );
        assert_eq!(manual.document_template, None);
        let composite = settings(json!({
            "source": "composite",
            "searchEmbedder": {"source": "huggingFace"},
            "indexingEmbedder": {"source": "ollama", "model": "m", "documentTemplate": "{{doc.b}}"}
        }))
        .expect("valid");
        assert_eq!(composite.document_template.as_deref(), Some("{{doc.b}}"));
        assert!(
            matches!(&composite.config, EmbedderConfig::Composite { search, .. }
            if matches!(search.as_ref(), EmbedderConfig::HuggingFace { revision: Some(_), .. }))
        );
        assert!(settings(json!({"source": "rest"})).is_err());
        assert!(settings(json!({"source": "other"})).is_err());
    }
}
