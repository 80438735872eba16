//! Rendering a found template with a found input: a document template renders a document
//! to a string (`doc`, `fields`), a fragment renders a document (`doc`) or a search query
//! (`q`, `media`) to a JSON value of its own shape.
//!
//! Invariant: the renderers are the ones indexing, search and chats use (document templates
//! cut at their byte limit, the reserved `_vectors`, `_geo` and `_geojson` hidden), so what
//! renders here is what the server embeds or shows the model; a document template cannot
//! render a search query.

use serde_json::Value;

use super::error::RenderingError;
use super::input::Input;
use super::template::Template;
use crate::embedders::template::is_searchable;

/// `template` rendered with `input`.
pub fn render(template: &Template, input: &Input) -> Result<Value, RenderingError> {
    match (template, input) {
        (
            Template::Document { template, .. },
            Input::Document {
                document,
                searchable,
            },
        ) => {
            let searchable = |field: &str| is_searchable(searchable.as_deref(), field);
            template
                .render(document, &searchable)
                .map(Value::String)
                .map_err(RenderingError::Template)
        }
        (Template::Document { .. }, Input::Search { .. }) => {
            Err(RenderingError::TemplateWithSearch)
        }
        (Template::Fragment(fragment), Input::Document { document, .. }) => fragment
            .try_render_document(document)
            .map_err(RenderingError::Fragment),
        (Template::Fragment(fragment), Input::Search { q, media }) => fragment
            .try_render_search(q.as_deref(), media.as_ref())
            .map_err(RenderingError::Fragment),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::embedders::DocumentTemplate;
    use crate::embedders::fragment::FragmentTemplate;

    fn document(value: Value, searchable: Option<Vec<String>>) -> Input {
        let Value::Object(document) = value else {
            panic!("an object")
        };
        Input::Document {
            document,
            searchable,
        }
    }

    fn document_template(text: &str, max_bytes: usize) -> Template {
        Template::Document {
            text: text.to_owned(),
            template: DocumentTemplate::new(text, max_bytes).expect("parses"),
        }
    }

    #[test]
    fn a_document_template_sees_fields_and_their_searchability() {
        let template = document_template(
            "{% for f in fields %}{{f.name}}={{f.value}}/{{f.is_searchable}};{% endfor %}",
            400,
        );
        let input = document(
            json!({"id": 2, "name": "doggo", "_geo": {"lat": 1, "lng": 2}}),
            Some(vec!["name".to_owned()]),
        );
        assert_eq!(
            render(&template, &input),
            Ok(json!("id=2/false;name=doggo/true;"))
        );
        let short = document_template("{{doc.name}} is a good dog", 9);
        assert_eq!(render(&short, &input), Ok(json!("doggo is ")));
    }

    #[test]
    fn a_document_template_cannot_render_a_search() {
        let template = document_template("{{doc.name}}", 400);
        let search = Input::Search {
            q: Some("x".to_owned()),
            media: None,
        };
        assert_eq!(
            render(&template, &search),
            Err(RenderingError::TemplateWithSearch)
        );
        let empty = document(Value::Object(Map::new()), None);
        let error = render(&template, &empty).expect_err("no name");
        assert!(
            error
                .to_string()
                .starts_with("user error: missing field in document: liquid: Unknown index"),
            "{error}"
        );
    }

    #[test]
    fn fragments_render_documents_and_searches_to_their_shape() {
        let fragment = Template::Fragment(
            FragmentTemplate::new(json!({"text": "{{q}}", "n": 3})).expect("parses"),
        );
        let search = Input::Search {
            q: Some("hello".to_owned()),
            media: Some(json!({"breed": "lab"})),
        };
        assert_eq!(
            render(&fragment, &search),
            Ok(json!({"text": "hello", "n": 3}))
        );
        let media = Template::Fragment(
            FragmentTemplate::new(json!("It's a {{ media.breed }}")).expect("parses"),
        );
        assert_eq!(render(&media, &search), Ok(json!("It's a lab")));
        let doc = Template::Fragment(FragmentTemplate::new(json!("{{doc.name}}")).expect("parses"));
        assert_eq!(
            render(&doc, &document(json!({"name": "iko"}), None)),
            Ok(json!("iko"))
        );
        assert!(matches!(
            render(&doc, &search),
            Err(RenderingError::Fragment(_))
        ));
    }
}
