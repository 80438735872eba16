//! The fields and sources of an embedder, and which fields each source allows or requires,
//! at the top level and inside a composite embedder's `searchEmbedder`/`indexingEmbedder`.
//!
//! Invariants: [`field_status`] answers for every (source, field, nesting) triple; a field
//! name it does not know is disallowed everywhere.

use serde_json::{Map, Value};

/// Fields of an embedder object, in Meilisearch's order (the unknown-field message).
pub const EMBEDDER_FIELDS: [&str; 18] = [
    "source",
    "model",
    "revision",
    "pooling",
    "apiKey",
    "dimensions",
    "binaryQuantized",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "headers",
    "searchEmbedder",
    "indexingEmbedder",
    "distribution",
];

/// Fields of a `searchEmbedder`/`indexingEmbedder` object, in Meilisearch's order.
pub const SUB_EMBEDDER_FIELDS: [&str; 18] = [
    "source",
    "model",
    "revision",
    "pooling",
    "apiKey",
    "dimensions",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "headers",
    "distribution",
    "binaryQuantized",
    "searchEmbedder",
    "indexingEmbedder",
];

/// How many of [`SUB_EMBEDDER_FIELDS`] (the first ones) a written sub-embedder holds.
const SUB_EMBEDDER_WRITTEN_FIELDS: usize = 14;

/// The fields in the order Meilisearch lists a source's available fields.
const LISTED_FIELDS: [&str; 18] = [
    "source",
    "model",
    "revision",
    "pooling",
    "apiKey",
    "dimensions",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "headers",
    "searchEmbedder",
    "indexingEmbedder",
    "distribution",
    "binaryQuantized",
];

/// The fields in the order Meilisearch checks them against the source (the first failing
/// one is reported).
pub const CHECKED_FIELDS: [&str; 17] = [
    "model",
    "revision",
    "pooling",
    "dimensions",
    "apiKey",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "headers",
    "searchEmbedder",
    "indexingEmbedder",
    "binaryQuantized",
    "distribution",
];

/// Where an embedder object sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    NotNested,
    Search,
    Indexing,
}

impl Nesting {
    /// The embedder name as Meilisearch locates a nested embedder (`name.searchEmbedder`).
    pub fn located_name(self, name: &str) -> String {
        match self {
            Nesting::NotNested => name.to_owned(),
            Nesting::Search => format!("{name}.searchEmbedder"),
            Nesting::Indexing => format!("{name}.indexingEmbedder"),
        }
    }

    /// The ` for the … embedder` phrase of messages.
    pub fn in_context(self) -> &'static str {
        match self {
            Nesting::NotNested => "",
            Nesting::Search => " for the search embedder",
            Nesting::Indexing => " for the indexing embedder",
        }
    }

    /// The note a nested embedder's decoding error ends with.
    pub fn nesting_note(self) -> &'static str {
        match self {
            Nesting::NotNested => "",
            Nesting::Search => "\n  - note: nesting embedders in `searchEmbedder` is not allowed",
            Nesting::Indexing => {
                "\n  - note: nesting embedders in `indexingEmbedder` is not allowed"
            }
        }
    }
}

/// An embedder source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    OpenAi,
    HuggingFace,
    Ollama,
    UserProvided,
    Rest,
    Composite,
}

/// Every source, in Meilisearch's order.
pub const SOURCES: [Source; 6] = [
    Source::OpenAi,
    Source::HuggingFace,
    Source::Ollama,
    Source::UserProvided,
    Source::Rest,
    Source::Composite,
];

/// Accepted values of `source`, in Meilisearch's order.
pub const EMBEDDER_SOURCES: [&str; 6] = [
    "openAi",
    "huggingFace",
    "ollama",
    "userProvided",
    "rest",
    "composite",
];

impl Source {
    /// The source's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Source::OpenAi => "openAi",
            Source::HuggingFace => "huggingFace",
            Source::Ollama => "ollama",
            Source::UserProvided => "userProvided",
            Source::Rest => "rest",
            Source::Composite => "composite",
        }
    }

    /// The source named `name`.
    pub fn from_name(name: &str) -> Option<Source> {
        SOURCES.into_iter().find(|source| source.name() == name)
    }
}

/// Whether a field must, may or must not be given for a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldStatus {
    Mandatory,
    Allowed,
    Disallowed,
}

/// The status of `field` for `source` at `nesting`.
pub fn field_status(source: Source, field: &str, nesting: Nesting) -> FieldStatus {
    match field {
        "distribution" | "binaryQuantized" => {
            return if nesting == Nesting::NotNested {
                FieldStatus::Allowed
            } else {
                FieldStatus::Disallowed
            };
        }
        "documentTemplate" | "documentTemplateMaxBytes" if nesting == Nesting::Search => {
            return FieldStatus::Disallowed;
        }
        "indexingFragments" if source == Source::Rest && nesting == Nesting::Search => {
            return FieldStatus::Disallowed;
        }
        "searchFragments" if source == Source::Rest && nesting == Nesting::Indexing => {
            return FieldStatus::Disallowed;
        }
        _ => {}
    }
    let (mandatory, allowed) = source_fields(source);
    if mandatory.contains(&field) {
        FieldStatus::Mandatory
    } else if field == "source" || allowed.contains(&field) {
        FieldStatus::Allowed
    } else {
        FieldStatus::Disallowed
    }
}

/// The mandatory and the other allowed fields of a source (`source` is always allowed).
fn source_fields(source: Source) -> (&'static [&'static str], &'static [&'static str]) {
    const TEMPLATE: [&str; 2] = ["documentTemplate", "documentTemplateMaxBytes"];
    match source {
        Source::OpenAi => (
            &[],
            &[
                "model",
                "apiKey",
                "dimensions",
                "url",
                TEMPLATE[0],
                TEMPLATE[1],
            ],
        ),
        Source::HuggingFace => (
            &[],
            &["model", "revision", "pooling", TEMPLATE[0], TEMPLATE[1]],
        ),
        Source::Ollama => (
            &["model"],
            &["apiKey", "dimensions", "url", TEMPLATE[0], TEMPLATE[1]],
        ),
        Source::UserProvided => (&["dimensions"], &[]),
        Source::Rest => (
            &["url", "request", "response"],
            &[
                "apiKey",
                "dimensions",
                "headers",
                "indexingFragments",
                "searchFragments",
                TEMPLATE[0],
                TEMPLATE[1],
            ],
        ),
        Source::Composite => (&["searchEmbedder", "indexingEmbedder"], &[]),
    }
}

/// The sources for which `field` is not disallowed at `nesting`.
pub fn sources_allowing(field: &str, nesting: Nesting) -> Vec<Source> {
    SOURCES
        .into_iter()
        .filter(|source| field_status(*source, field, nesting) != FieldStatus::Disallowed)
        .collect()
}

/// The fields `source` does not disallow at `nesting`, in Meilisearch's listing order.
pub fn fields_allowed(source: Source, nesting: Nesting) -> Vec<&'static str> {
    LISTED_FIELDS
        .into_iter()
        .filter(|field| field_status(source, field, nesting) != FieldStatus::Disallowed)
        .collect()
}

/// An embedder object as Meilisearch writes it (task content and details): its fields in
/// [`EMBEDDER_FIELDS`] order, a sub-embedder's in [`SUB_EMBEDDER_FIELDS`] order without the
/// fields a sub-embedder never holds.
pub fn in_wire_order(fields: &Map<String, Value>) -> Map<String, Value> {
    let mut ordered = Map::new();
    for field in EMBEDDER_FIELDS {
        let Some(value) = fields.get(field) else {
            continue;
        };
        let value = match (field, value) {
            ("searchEmbedder" | "indexingEmbedder", Value::Object(sub)) => {
                Value::Object(sub_in_wire_order(sub))
            }
            _ => value.clone(),
        };
        ordered.insert(field.to_owned(), value);
    }
    ordered
}

fn sub_in_wire_order(fields: &Map<String, Value>) -> Map<String, Value> {
    SUB_EMBEDDER_FIELDS[..SUB_EMBEDDER_WRITTEN_FIELDS]
        .iter()
        .filter_map(|field| Some(((*field).to_owned(), fields.get(*field)?.clone())))
        .collect()
}
