//! Finding the template `POST /render-template` renders: an embedder's document template or
//! one of its fragments, an index's chat template, or a template given inline; parsed with
//! the same renderers indexing, search and chats use, so a preview renders what they do.
//!
//! Order, as Meilisearch 1.50 checks (the first failure is the answer): the kind's feature
//! gate, the kind's fields one by one, the index, the embedder, then the template itself.
//!
//! Invariant: a template read from an index was validated when the settings were accepted,
//! so one that no longer parses is a failure of the stored state (`internal`), never the
//! request's.

use std::num::NonZeroUsize;
use std::sync::Arc;

use serde_json::Value;

use super::error::{FetchTemplateError, FragmentKind};
use super::gates::check_template_kind;
use super::parameters::{refuse, require};
use super::request::{TemplateKind, TemplateRequest};
use crate::control::features::RuntimeFeatures;
use crate::coordinator::catalog::IndexRecord;
use crate::embedders::config::DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES;
use crate::embedders::fragment::FragmentTemplate;
use crate::embedders::{DocumentTemplate, EmbedderSettings};
use crate::errors::ResponseError;

/// The field names the messages give.
const INDEX_UID: &str = "index_uid";
const EMBEDDER: &str = "embedder";
const FRAGMENT: &str = "fragment";
const INLINE: &str = "inline";
const DOCUMENT_TEMPLATE_MAX_BYTES: &str = "document_template_max_bytes";

/// The index of a uid, if it exists.
pub type IndexLookup<'a> = &'a dyn Fn(&str) -> Option<Arc<IndexRecord>>;

/// A template ready to render.
#[derive(Debug)]
pub enum Template {
    /// A Liquid document template (`doc` and `fields`) and its text.
    Document {
        text: String,
        template: DocumentTemplate,
    },
    /// A JSON fragment whose strings are Liquid templates.
    Fragment(FragmentTemplate),
}

impl Template {
    /// The template as configured or given, unrendered.
    pub fn source(&self) -> Value {
        match self {
            Template::Document { text, .. } => Value::String(text.clone()),
            Template::Fragment(fragment) => fragment.value().clone(),
        }
    }
}

/// The template, and the index it was read from (`None` for an inline template).
#[derive(Debug)]
pub struct FoundTemplate {
    pub template: Template,
    pub index: Option<Arc<IndexRecord>>,
}

/// The template `request` names, with the features `features` and the indexes of `lookup`.
pub fn find_template(
    request: &TemplateRequest,
    features: RuntimeFeatures,
    lookup: IndexLookup<'_>,
) -> Result<FoundTemplate, FetchTemplateError> {
    check_template_kind(request.kind, features).map_err(FetchTemplateError::Feature)?;
    match request.kind {
        TemplateKind::DocumentTemplate => embedder_template(request, lookup),
        TemplateKind::ChatDocumentTemplate => chat_template(request, lookup),
        TemplateKind::IndexingFragment => stored_fragment(request, lookup, FragmentKind::Indexing),
        TemplateKind::SearchFragment => stored_fragment(request, lookup, FragmentKind::Search),
        TemplateKind::InlineDocumentTemplate => inline_template(request),
        TemplateKind::InlineFragment => inline_fragment(request),
    }
}

/// The value of a field `request`'s kind needs.
fn required<'request, Field>(
    request: &TemplateRequest,
    value: &'request Option<Field>,
    name: &'static str,
) -> Result<&'request Field, FetchTemplateError> {
    require(value, name).map_err(|violation| FetchTemplateError::Parameter {
        kind: request.kind,
        violation,
    })
}

/// Checks that a field `request`'s kind refuses is absent.
fn refused<Field>(
    request: &TemplateRequest,
    value: &Option<Field>,
    name: &'static str,
) -> Result<(), FetchTemplateError> {
    refuse(value, name).map_err(|violation| FetchTemplateError::Parameter {
        kind: request.kind,
        violation,
    })
}

/// The index named `uid`.
fn index(lookup: IndexLookup<'_>, uid: &str) -> Result<Arc<IndexRecord>, FetchTemplateError> {
    lookup(uid).ok_or_else(|| FetchTemplateError::IndexNotFound(uid.to_owned()))
}

/// A stored template or fragment that does not parse any more.
fn stored(error: impl std::fmt::Display) -> FetchTemplateError {
    FetchTemplateError::Stored(ResponseError::internal(error))
}

/// The settings of embedder `embedder` of `record`; `None` when it has no such embedder.
fn embedder_settings(
    record: &IndexRecord,
    embedder: &str,
) -> Result<Option<EmbedderSettings>, FetchTemplateError> {
    record
        .settings
        .embedders
        .get(embedder)
        .map(|map| EmbedderSettings::from_map(map).map_err(stored))
        .transpose()
}

/// `documentTemplate`: an embedder's document template, cut at the request's byte limit or
/// the embedder's own.
fn embedder_template(
    request: &TemplateRequest,
    lookup: IndexLookup<'_>,
) -> Result<FoundTemplate, FetchTemplateError> {
    refused(request, &request.fragment, FRAGMENT)?;
    refused(request, &request.inline, INLINE)?;
    let uid = required(request, &request.index_uid, INDEX_UID)?;
    let embedder = required(request, &request.embedder, EMBEDDER)?;
    let record = index(lookup, uid)?;
    let settings = embedder_settings(&record, embedder)?.ok_or_else(|| {
        FetchTemplateError::MissingEmbedder {
            index: uid.clone(),
            embedder: embedder.clone(),
        }
    })?;
    let text = settings.document_template.ok_or_else(|| {
        FetchTemplateError::NotADocumentTemplateEmbedder {
            index: uid.clone(),
            embedder: embedder.clone(),
        }
    })?;
    let max_bytes = request
        .document_template_max_bytes
        .map_or(settings.document_template_max_bytes, NonZeroUsize::get);
    let template = DocumentTemplate::new(&text, max_bytes).map_err(stored)?;
    Ok(FoundTemplate {
        template: Template::Document { text, template },
        index: Some(record),
    })
}

/// `chatDocumentTemplate`: the index's chat template, cut at the request's byte limit or
/// the index's own.
fn chat_template(
    request: &TemplateRequest,
    lookup: IndexLookup<'_>,
) -> Result<FoundTemplate, FetchTemplateError> {
    let uid = required(request, &request.index_uid, INDEX_UID)?;
    refused(request, &request.embedder, EMBEDDER)?;
    refused(request, &request.fragment, FRAGMENT)?;
    refused(request, &request.inline, INLINE)?;
    let record = index(lookup, uid)?;
    let settings = &record.settings;
    let text = settings.chat_document_template.clone();
    let max_bytes = request
        .document_template_max_bytes
        .map_or(settings.chat_document_template_max_bytes, NonZeroUsize::get);
    let template = DocumentTemplate::new(&text, max_bytes).map_err(stored)?;
    Ok(FoundTemplate {
        template: Template::Document { text, template },
        index: Some(record),
    })
}

/// `indexingFragment` and `searchFragment`: one fragment of an embedder that uses
/// fragments.
fn stored_fragment(
    request: &TemplateRequest,
    lookup: IndexLookup<'_>,
    kind: FragmentKind,
) -> Result<FoundTemplate, FetchTemplateError> {
    let uid = required(request, &request.index_uid, INDEX_UID)?;
    let embedder = required(request, &request.embedder, EMBEDDER)?;
    let fragment = required(request, &request.fragment, FRAGMENT)?;
    refused(request, &request.inline, INLINE)?;
    let max_bytes = &request.document_template_max_bytes;
    refused(request, max_bytes, DOCUMENT_TEMPLATE_MAX_BYTES)?;
    let record = index(lookup, uid)?;
    let missing_fragment = |kind| FetchTemplateError::MissingFragment {
        index: uid.clone(),
        embedder: embedder.clone(),
        fragment: fragment.clone(),
        kind,
    };
    // Meilisearch reports a search fragment's missing embedder as a missing indexing
    // fragment.
    let settings = match kind {
        FragmentKind::Indexing => embedder_settings(&record, embedder)?.ok_or_else(|| {
            FetchTemplateError::MissingEmbedder {
                index: uid.clone(),
                embedder: embedder.clone(),
            }
        })?,
        FragmentKind::Search => embedder_settings(&record, embedder)?
            .ok_or_else(|| missing_fragment(FragmentKind::Indexing))?,
    };
    if settings.config.indexing_fragments().is_empty() {
        return Err(FetchTemplateError::NotAFragmentEmbedder {
            index: uid.clone(),
            embedder: embedder.clone(),
        });
    }
    let fragments = match kind {
        FragmentKind::Indexing => settings.config.indexing_fragments(),
        FragmentKind::Search => settings.config.search_fragments(),
    };
    let value = fragments
        .get(fragment)
        .ok_or_else(|| missing_fragment(kind))?;
    let template = FragmentTemplate::new(value.clone())
        .map_err(|error| stored(error.parsing_error(&format!(".{kind}Fragments.{fragment}"))))?;
    Ok(FoundTemplate {
        template: Template::Fragment(template),
        index: Some(record),
    })
}

/// `inlineDocumentTemplate`: a document template given as a string, cut at the request's
/// byte limit or the default one.
fn inline_template(request: &TemplateRequest) -> Result<FoundTemplate, FetchTemplateError> {
    refused(request, &request.index_uid, INDEX_UID)?;
    refused(request, &request.embedder, EMBEDDER)?;
    refused(request, &request.fragment, FRAGMENT)?;
    let inline = required(request, &request.inline, INLINE)?;
    let text = inline
        .as_str()
        .ok_or(FetchTemplateError::InlineTemplateNotAString)?
        .to_owned();
    let max_bytes = request
        .document_template_max_bytes
        .map_or(DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES, NonZeroUsize::get);
    let template = DocumentTemplate::new(&text, max_bytes)
        .map_err(FetchTemplateError::InlineTemplateParsing)?;
    Ok(FoundTemplate {
        template: Template::Document { text, template },
        index: None,
    })
}

/// `inlineFragment`: a fragment given as any JSON value.
fn inline_fragment(request: &TemplateRequest) -> Result<FoundTemplate, FetchTemplateError> {
    refused(request, &request.index_uid, INDEX_UID)?;
    refused(request, &request.embedder, EMBEDDER)?;
    refused(request, &request.fragment, FRAGMENT)?;
    let inline = required(request, &request.inline, INLINE)?;
    refused(
        request,
        &request.document_template_max_bytes,
        DOCUMENT_TEMPLATE_MAX_BYTES,
    )?;
    let template =
        FragmentTemplate::new(inline.clone()).map_err(FetchTemplateError::InlineFragmentParsing)?;
    Ok(FoundTemplate {
        template: Template::Fragment(template),
        index: None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Map, json};
    use time::OffsetDateTime;

    use super::*;
    use crate::render::parameters::Violation;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    /// Index `dogs`: a fragment embedder `rest`, a template embedder `tmpl` (cut at 10
    /// bytes) and a `userProvided` embedder `manual`.
    fn dogs() -> Arc<IndexRecord> {
        let mut record = IndexRecord::new(
            "dogs",
            "dogs".to_owned(),
            1,
            None,
            OffsetDateTime::UNIX_EPOCH,
        );
        let rest = json!({
            "source": "rest", "url": "http://e", "request": "{{fragment}}", "response": "{{embedding}}",
            "indexingFragments": {"basic": {"value": "{{doc.name}} is a dog"}},
            "searchFragments": {"query": {"value": {"text": "{{q}}"}}}
        });
        let template = json!({"source": "rest", "url": "http://e", "request": "{{text}}",
            "response": "{{embedding}}", "documentTemplate": "{{doc.name}}", "documentTemplateMaxBytes": 10});
        let manual = json!({"source": "userProvided", "dimensions": 3});
        record.settings.embedders = BTreeMap::from([
            ("rest".to_owned(), object(rest)),
            ("tmpl".to_owned(), object(template)),
            ("manual".to_owned(), object(manual)),
        ]);
        Arc::new(record)
    }

    fn every_feature() -> RuntimeFeatures {
        RuntimeFeatures {
            render_route: true,
            chat_completions: true,
            multimodal: true,
            ..RuntimeFeatures::default()
        }
    }

    fn request(kind: TemplateKind) -> TemplateRequest {
        TemplateRequest {
            kind,
            index_uid: Some("dogs".to_owned()),
            embedder: None,
            fragment: None,
            inline: None,
            document_template_max_bytes: None,
        }
    }

    fn find(request: &TemplateRequest) -> Result<FoundTemplate, FetchTemplateError> {
        let index = dogs();
        let lookup = move |uid: &str| (uid == "dogs").then(|| Arc::clone(&index));
        find_template(request, every_feature(), &lookup)
    }

    fn max_bytes(found: &FoundTemplate) -> Option<String> {
        match &found.template {
            Template::Document { template, .. } => {
                let document = object(json!({"name": "a long dog name"}));
                template.render(&document, &|_| true).ok()
            }
            Template::Fragment(_) => None,
        }
    }

    #[test]
    fn an_embedder_template_is_read_and_cut_at_the_requested_or_stored_limit() {
        let mut document = request(TemplateKind::DocumentTemplate);
        document.embedder = Some("tmpl".to_owned());
        let found = find(&document).expect("found");
        assert_eq!(found.template.source(), json!("{{doc.name}}"));
        assert_eq!(
            found.index.map(|index| index.uid.clone()),
            Some("dogs".to_owned())
        );
        assert_eq!(
            max_bytes(&find(&document).expect("found")),
            Some("a long dog".to_owned())
        );
        document.document_template_max_bytes = NonZeroUsize::new(4);
        assert_eq!(
            max_bytes(&find(&document).expect("found")),
            Some("a lo".to_owned())
        );
        for (embedder, expected) in [
            ("rest", "NotADocumentTemplateEmbedder"),
            ("manual", "NotADocumentTemplateEmbedder"),
            ("wrong", "MissingEmbedder"),
        ] {
            document.embedder = Some(embedder.to_owned());
            let error = find(&document).expect_err("refused");
            assert!(
                format!("{error:?}").starts_with(expected),
                "{embedder}: {error:?}"
            );
        }
    }

    #[test]
    fn fields_are_checked_in_meilisearch_order_after_the_feature_gate() {
        let mut document = request(TemplateKind::DocumentTemplate);
        document.index_uid = None;
        document.fragment = Some("f".to_owned());
        document.inline = Some(json!("x"));
        let violation = |error| match error {
            FetchTemplateError::Parameter { violation, .. } => violation,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            violation(find(&document).expect_err("refused")),
            Violation::Disallowed("fragment")
        );
        document.fragment = None;
        assert_eq!(
            violation(find(&document).expect_err("refused")),
            Violation::Disallowed("inline")
        );
        document.inline = None;
        assert_eq!(
            violation(find(&document).expect_err("refused")),
            Violation::Missing("index_uid")
        );
        let mut fragment = request(TemplateKind::InlineFragment);
        fragment.document_template_max_bytes = NonZeroUsize::new(3);
        let gated = find_template(&fragment, RuntimeFeatures::default(), &|_| None);
        assert!(
            matches!(gated, Err(FetchTemplateError::Feature(_))),
            "{gated:?}"
        );
        assert_eq!(
            violation(find(&fragment).expect_err("refused")),
            Violation::Disallowed("index_uid")
        );
        fragment.index_uid = None;
        assert_eq!(
            violation(find(&fragment).expect_err("refused")),
            Violation::Missing("inline")
        );
        fragment.inline = Some(json!({"a": "{{q}}"}));
        assert_eq!(
            violation(find(&fragment).expect_err("refused")),
            Violation::Disallowed("document_template_max_bytes")
        );
        fragment.document_template_max_bytes = None;
        assert_eq!(
            find(&fragment).expect("found").template.source(),
            json!({"a": "{{q}}"})
        );
    }

    #[test]
    fn stored_fragments_are_found_by_kind_with_meilisearch_s_errors() {
        let mut fragment = request(TemplateKind::IndexingFragment);
        fragment.embedder = Some("rest".to_owned());
        fragment.fragment = Some("basic".to_owned());
        assert_eq!(
            find(&fragment).expect("found").template.source(),
            json!("{{doc.name}} is a dog")
        );
        fragment.kind = TemplateKind::SearchFragment;
        fragment.fragment = Some("query".to_owned());
        assert_eq!(
            find(&fragment).expect("found").template.source(),
            json!({"text": "{{q}}"})
        );
        fragment.fragment = Some("basic".to_owned());
        assert!(matches!(
            find(&fragment),
            Err(FetchTemplateError::MissingFragment {
                kind: FragmentKind::Search,
                ..
            })
        ));
        fragment.embedder = Some("wrong".to_owned());
        assert!(matches!(
            find(&fragment),
            Err(FetchTemplateError::MissingFragment {
                kind: FragmentKind::Indexing,
                ..
            })
        ));
        fragment.kind = TemplateKind::IndexingFragment;
        assert!(matches!(
            find(&fragment),
            Err(FetchTemplateError::MissingEmbedder { .. })
        ));
        fragment.embedder = Some("tmpl".to_owned());
        assert!(matches!(
            find(&fragment),
            Err(FetchTemplateError::NotAFragmentEmbedder { .. })
        ));
        fragment.index_uid = Some("nope".to_owned());
        assert_eq!(
            find(&fragment).expect_err("no index"),
            FetchTemplateError::IndexNotFound("nope".to_owned())
        );
    }

    #[test]
    fn chat_and_inline_templates_are_read_and_checked() {
        let chat = find(&request(TemplateKind::ChatDocumentTemplate)).expect("found");
        assert_eq!(
            chat.template.source(),
            json!(crate::embedders::config::DEFAULT_DOCUMENT_TEMPLATE)
        );
        let mut inline = request(TemplateKind::InlineDocumentTemplate);
        inline.index_uid = None;
        inline.inline = Some(json!(1));
        assert_eq!(
            find(&inline).expect_err("no string"),
            FetchTemplateError::InlineTemplateNotAString
        );
        inline.inline = Some(json!("{{ doc.name"));
        assert!(matches!(
            find(&inline),
            Err(FetchTemplateError::InlineTemplateParsing(_))
        ));
        inline.inline = Some(json!("{{ doc.name }}"));
        let found = find(&inline).expect("found");
        assert!(found.index.is_none());
        assert_eq!(found.template.source(), json!("{{ doc.name }}"));
    }
}
