//! What one remote embedder computes for one document, by Meilisearch 1.41's rules: what
//! the document is rendered to (its document template, or each indexing fragment that
//! applies to it), which of its stored embeddings it keeps, and which it computes again.
//!
//! Rules:
//! - a document that brings its own embeddings for the embedder (an array, `null`, or an
//!   object with embeddings or with `regenerate: false`) is left to the shard;
//! - a new document, or a full re-embedding, renders everything;
//! - a stored document whose embeddings may not be generated again (`regenerate: false`)
//!   keeps them, unless the update asks `{"regenerate": true}`, which renders everything;
//! - otherwise each renderer compares what the stored document rendered to (with the
//!   renderer as it was) with what the new one renders to: the same keeps the stored
//!   embedding, a change computes it again, and a fragment that no longer applies drops its
//!   embedding. With fragments, embeddings the user gave (not generated) cannot be told
//!   apart by fragment, so every fragment is computed again.
//!
//! Invariant: a plan that changes nothing emits nothing (the shard keeps what it has),
//! except for a document that asked `{"regenerate": true}`, whose entry is written whole.

use serde_json::{Map, Value};
use shards::shard::StoredVectors;
use shards::vectors::VECTORS_FIELD;

use crate::embedders::DocumentTemplate;
use crate::embedders::fragment::FragmentTemplate;
use crate::errors::ResponseError;

/// What a document's `_vectors` says of one embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// No entry: the stored status decides.
    Nothing,
    /// `{"regenerate": true}` without embeddings: compute them.
    Regenerate,
    /// Embeddings, `null`, or `regenerate: false`: the user's, the shard records them.
    Embeddings,
}

/// What `document` gives embedder `name`.
pub fn given(document: &Map<String, Value>, name: &str) -> Given {
    let Some(entry) = document
        .get(VECTORS_FIELD)
        .and_then(Value::as_object)
        .and_then(|vectors| vectors.get(name))
    else {
        return Given::Nothing;
    };
    match entry {
        Value::Object(fields) => {
            let embeddings = fields
                .get("embeddings")
                .is_some_and(|embeddings| !embeddings.is_null());
            if embeddings || fields.get("regenerate") == Some(&Value::Bool(false)) {
                Given::Embeddings
            } else {
                Given::Regenerate
            }
        }
        _ => Given::Embeddings,
    }
}

/// What a document is rendered to by one embedder.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Text(String),
    Fragment(Value),
}

/// How an embedder renders documents, now and before the change being applied.
pub enum Renderers<'a> {
    /// A document template; `searchable` says whether a field is searchable.
    Template {
        current: &'a DocumentTemplate,
        previous: Option<&'a DocumentTemplate>,
        searchable: &'a dyn Fn(&str) -> bool,
    },
    /// Indexing fragments by name (sorted), and the previous ones by name.
    Fragments {
        current: &'a [(String, FragmentTemplate)],
        previous: &'a [(String, FragmentTemplate)],
    },
}

/// One document as the plan sees it.
pub struct Subject<'a> {
    pub external_id: &'a str,
    pub document: &'a Map<String, Value>,
    /// The stored version (`None`: a new document).
    pub stored: Option<&'a Map<String, Value>>,
    /// What the stored version keeps for the embedder.
    pub vectors: Option<&'a StoredVectors>,
    /// Render everything, whatever is stored (a full re-embedding).
    pub full: bool,
}

/// The plan for one document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Stored embeddings kept, with their fragment.
    pub kept: Vec<(Option<String>, Vec<f32>)>,
    /// What to embed, with its fragment.
    pub inputs: Vec<(Option<String>, Input)>,
}

/// The plan of `subject` (see the module documentation); `None`: nothing to write.
pub fn plan(
    subject: &Subject<'_>,
    given: Given,
    renderers: &Renderers<'_>,
) -> Result<Option<Plan>, ResponseError> {
    if given == Given::Embeddings {
        return Ok(None);
    }
    let regenerates = subject.vectors.is_none_or(|vectors| vectors.regenerate);
    let stored = match subject.stored {
        Some(stored) if !subject.full && regenerates => stored,
        Some(_) if !subject.full && given == Given::Nothing => return Ok(None),
        _ => return render_all(subject, renderers).map(Some),
    };
    let (plan, changed) = match renderers {
        Renderers::Template {
            current,
            previous,
            searchable,
        } => diff_template(
            subject,
            stored,
            current,
            previous.unwrap_or(current),
            *searchable,
        )?,
        Renderers::Fragments { .. }
            if subject.vectors.is_some_and(|vectors| !vectors.generated) =>
        {
            (render_all(subject, renderers)?, true)
        }
        Renderers::Fragments { current, previous } => {
            diff_fragments(subject, stored, current, previous)
        }
    };
    Ok((changed || given == Given::Regenerate).then_some(plan))
}

/// Everything the document renders to, nothing kept.
fn render_all(subject: &Subject<'_>, renderers: &Renderers<'_>) -> Result<Plan, ResponseError> {
    let mut plan = Plan::default();
    match renderers {
        Renderers::Template {
            current,
            searchable,
            ..
        } => {
            let text = current
                .render(subject.document, *searchable)
                .map_err(|error| error.to_document_error(subject.external_id))?;
            plan.inputs.push((None, Input::Text(text)));
        }
        Renderers::Fragments { current, .. } => {
            for (name, fragment) in current.iter() {
                if let Some(value) = fragment.render_document(subject.document) {
                    plan.inputs
                        .push((Some(name.clone()), Input::Fragment(value)));
                }
            }
        }
    }
    Ok(plan)
}

/// The document template's plan against the stored document, and whether it changes
/// anything.
fn diff_template(
    subject: &Subject<'_>,
    stored: &Map<String, Value>,
    current: &DocumentTemplate,
    previous: &DocumentTemplate,
    searchable: &dyn Fn(&str) -> bool,
) -> Result<(Plan, bool), ResponseError> {
    let text = current
        .render(subject.document, searchable)
        .map_err(|error| error.to_document_error(subject.external_id))?;
    let before = previous.render(stored, searchable).ok();
    let mut plan = Plan::default();
    if before.as_ref() == Some(&text) {
        plan.kept = kept_vectors(subject);
        return Ok((plan, false));
    }
    plan.inputs.push((None, Input::Text(text)));
    Ok((plan, true))
}

/// The fragments' plan against the stored document, and whether it changes anything.
fn diff_fragments(
    subject: &Subject<'_>,
    stored: &Map<String, Value>,
    current: &[(String, FragmentTemplate)],
    previous: &[(String, FragmentTemplate)],
) -> (Plan, bool) {
    let old_vector = |name: &str| {
        subject.vectors.and_then(|vectors| {
            vectors
                .vectors
                .iter()
                .find(|(fragment, _)| fragment.as_deref() == Some(name))
                .map(|(_, vector)| vector.clone())
        })
    };
    let mut plan = Plan::default();
    let mut changed = false;
    for (name, fragment) in current {
        let now = fragment.render_document(subject.document);
        let before = previous
            .iter()
            .find(|(old_name, _)| old_name == name)
            .and_then(|(_, old)| old.render_document(stored));
        let old = old_vector(name);
        match now {
            Some(value) if before.as_ref() != Some(&value) => {
                plan.inputs
                    .push((Some(name.clone()), Input::Fragment(value)));
                changed = true;
            }
            Some(_) => plan
                .kept
                .extend(old.map(|vector| (Some(name.clone()), vector))),
            None => changed |= old.is_some(),
        }
    }
    (plan, changed)
}

/// Every stored embedding, with its fragment.
fn kept_vectors(subject: &Subject<'_>) -> Vec<(Option<String>, Vec<f32>)> {
    subject
        .vectors
        .map(|vectors| vectors.vectors.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    fn fragments() -> Vec<(String, FragmentTemplate)> {
        vec![
            (
                "image".to_owned(),
                FragmentTemplate::new(json!({"image": "{{doc.picture}}"})).expect("parses"),
            ),
            (
                "text".to_owned(),
                FragmentTemplate::new(json!({"text": "{{doc.title}}"})).expect("parses"),
            ),
        ]
    }

    fn generated(vectors: Vec<(&str, Vec<f32>)>) -> StoredVectors {
        StoredVectors {
            regenerate: true,
            generated: true,
            vectors: vectors
                .into_iter()
                .map(|(name, vector)| (Some(name.to_owned()), vector))
                .collect(),
        }
    }

    #[test]
    fn a_new_document_renders_every_fragment_that_applies() {
        let current = fragments();
        let renderers = Renderers::Fragments {
            current: &current,
            previous: &current,
        };
        let document = map(json!({"title": "cat"}));
        let subject = Subject {
            external_id: "1",
            document: &document,
            stored: None,
            vectors: None,
            full: false,
        };
        let plan = plan(&subject, Given::Nothing, &renderers)
            .expect("plans")
            .expect("embeds");
        assert_eq!(
            plan.inputs,
            vec![(
                Some("text".to_owned()),
                Input::Fragment(json!({"text": "cat"}))
            )]
        );
    }

    #[test]
    fn an_update_embeds_only_the_fragments_whose_rendering_changed() {
        let current = fragments();
        let renderers = Renderers::Fragments {
            current: &current,
            previous: &current,
        };
        let stored = map(json!({"title": "cat", "picture": "a.png"}));
        let vectors = generated(vec![("image", vec![1.0]), ("text", vec![2.0])]);
        let document = map(json!({"title": "dog", "picture": "a.png"}));
        let subject = Subject {
            external_id: "1",
            document: &document,
            stored: Some(&stored),
            vectors: Some(&vectors),
            full: false,
        };
        let plan = plan(&subject, Given::Nothing, &renderers)
            .expect("plans")
            .expect("embeds");
        assert_eq!(plan.kept, vec![(Some("image".to_owned()), vec![1.0])]);
        assert_eq!(plan.inputs.len(), 1);
        // The same document again changes nothing.
        let same = Subject {
            document: &stored,
            ..subject
        };
        assert_eq!(plan_of(&same, &renderers), None);
        // A picture removed drops the image embedding.
        let without = map(json!({"title": "cat"}));
        let dropped = Subject {
            document: &without,
            ..same
        };
        let plan = plan_of(&dropped, &renderers).expect("writes");
        assert_eq!(plan.kept, vec![(Some("text".to_owned()), vec![2.0])]);
        assert!(plan.inputs.is_empty());
    }

    fn plan_of(subject: &Subject<'_>, renderers: &Renderers<'_>) -> Option<Plan> {
        plan(subject, Given::Nothing, renderers).expect("plans")
    }

    #[test]
    fn given_embeddings_and_kept_user_vectors_are_left_alone() {
        assert_eq!(
            given(&map(json!({"_vectors": {"e": [1.0]}})), "e"),
            Given::Embeddings
        );
        assert_eq!(
            given(&map(json!({"_vectors": {"e": {"regenerate": true}}})), "e"),
            Given::Regenerate
        );
        assert_eq!(given(&map(json!({"id": 1})), "e"), Given::Nothing);
        let current = fragments();
        let renderers = Renderers::Fragments {
            current: &current,
            previous: &current,
        };
        let stored = map(json!({"title": "cat"}));
        let vectors = StoredVectors {
            regenerate: false,
            generated: false,
            vectors: vec![(None, vec![5.0])],
        };
        let document = map(json!({"title": "dog"}));
        let subject = Subject {
            external_id: "1",
            document: &document,
            stored: Some(&stored),
            vectors: Some(&vectors),
            full: false,
        };
        assert_eq!(plan_of(&subject, &renderers), None);
        let forced = plan(&subject, Given::Regenerate, &renderers)
            .expect("plans")
            .expect("embeds");
        assert_eq!(forced.inputs.len(), 1);
    }
}
