//! Editing documents by function (`POST /indexes/{index_uid}/documents/edit`): a Rhai
//! script run once per document, with `doc` bound to the document and the constant
//! `context` to the request's context. The script may change `doc`, or set it to `()` to
//! delete the document; it may not change the document's primary key.
//!
//! The route only checks that the script compiles ([`check_compiles`], with Rhai's default
//! engine, as Meilisearch does); each shard then compiles it with the bounded engine of
//! [`Edition::new`] and runs it on its own documents inside its prepared batch.
//!
//! Invariants: a script runs under the limits below (operations, call depth, sizes), so a
//! runaway script ends in an error instead of stalling a core; [`Edition::edit`] is a pure
//! function of the document, the script and the context (no time, no modules), so running
//! it again after a crash gives the same documents; an edited document keeps its original
//! key order, new fields coming after (Rhai maps are sorted by key).

use rhai::{AST, Dynamic, Engine, OptimizationLevel, Scope};
use serde_json::{Map, Value};
use shards::documents::document_id::extract_document_id;

use crate::errors::documents_error;
use crate::errors::{Code, ResponseError};

/// Operations one run of the script may perform (one document).
pub const SCRIPT_OPERATIONS_MAX: u64 = 1_000_000;
/// Nested function calls a script may make. Below Meilisearch's 1000: the script runs on
/// the core's indexing thread, whose stack must survive the deepest recursion.
pub const SCRIPT_CALL_DEPTH_MAX: usize = 64;
/// Variables a script may have in scope.
pub const SCRIPT_VARIABLES_MAX: usize = 1_000;
/// Functions a script may define.
pub const SCRIPT_FUNCTIONS_MAX: usize = 30;
/// Expression nesting depth at top level.
pub const SCRIPT_EXPRESSION_DEPTH_MAX: usize = 100;
/// Expression nesting depth inside functions.
pub const SCRIPT_FUNCTION_EXPRESSION_DEPTH_MAX: usize = 1_000;
/// Longest string a script may build (the payload limit's order of magnitude: a document
/// never needs more).
pub const SCRIPT_STRING_BYTES_MAX: usize = 100 * 1024 * 1024;
/// Largest array a script may build.
pub const SCRIPT_ARRAY_ELEMENTS_MAX: usize = 10_000;
/// Largest object a script may build.
pub const SCRIPT_MAP_ENTRIES_MAX: usize = 10_000;

/// The variable holding the document.
const DOCUMENT_VARIABLE: &str = "doc";
/// The constant holding the request's context.
const CONTEXT_VARIABLE: &str = "context";

/// What the script did to one document.
#[derive(Debug, Clone, PartialEq)]
pub enum Edited {
    /// The document came out equal to what went in.
    Unchanged,
    /// The document is replaced by this one (same primary key).
    Replaced(Map<String, Value>),
    /// The script set `doc` to `()`.
    Deleted,
}

/// What a shard needs to run an edition: the script, the context, the index's primary key
/// and uid (for error messages).
#[derive(Debug, Clone)]
pub struct EditionRequest {
    pub index_uid: String,
    pub function: String,
    pub context: Option<Map<String, Value>>,
    pub primary_key: String,
}

/// A compiled edition, ready to run on documents.
pub struct Edition {
    engine: Engine,
    ast: AST,
    context: Option<Dynamic>,
    primary_key: String,
    index_uid: String,
}

/// Refuses a script that does not compile: 400 `bad_request` with Rhai's message.
pub fn check_compiles(function: &str) -> Result<(), ResponseError> {
    Engine::new()
        .compile(function)
        .map(|_| ())
        .map_err(|error| ResponseError::new(Code::BadRequest, error.to_string()))
}

/// The engine every edition runs on: no I/O, no time, bounded.
fn bounded_engine() -> Engine {
    let mut engine = Engine::new();
    engine.set_optimization_level(OptimizationLevel::Full);
    engine.set_max_call_levels(SCRIPT_CALL_DEPTH_MAX);
    engine.set_max_operations(SCRIPT_OPERATIONS_MAX);
    engine.set_max_variables(SCRIPT_VARIABLES_MAX);
    engine.set_max_functions(SCRIPT_FUNCTIONS_MAX);
    engine.set_max_expr_depths(
        SCRIPT_EXPRESSION_DEPTH_MAX,
        SCRIPT_FUNCTION_EXPRESSION_DEPTH_MAX,
    );
    engine.set_max_string_size(SCRIPT_STRING_BYTES_MAX);
    engine.set_max_array_size(SCRIPT_ARRAY_ELEMENTS_MAX);
    engine.set_max_map_size(SCRIPT_MAP_ENTRIES_MAX);
    engine
}

impl Edition {
    /// Compiles `request`'s script on the bounded engine.
    pub fn new(request: &EditionRequest) -> Result<Edition, ResponseError> {
        let index_uid = request.index_uid.clone();
        let engine = bounded_engine();
        let ast = engine.compile(&request.function).map_err(|error| {
            edition_error(
                &index_uid,
                format!(
                    "Document edition runtime error encountered while compiling the function: {error}"
                ),
            )
        })?;
        let context = match &request.context {
            Some(context) => Some(
                rhai::serde::to_dynamic(Value::Object(context.clone()))
                    .map_err(|error| edition_error(&index_uid, error.to_string()))?,
            ),
            None => None,
        };
        Ok(Edition {
            engine,
            ast,
            context,
            primary_key: request.primary_key.clone(),
            index_uid,
        })
    }

    /// Runs the script on `document`.
    pub fn edit(&self, document: &Map<String, Value>) -> Result<Edited, ResponseError> {
        let original = Value::Object(document.clone());
        let bound = rhai::serde::to_dynamic(&original)
            .map_err(|error| edition_error(&self.index_uid, error.to_string()))?;
        let mut scope = Scope::new();
        if let Some(context) = &self.context {
            scope.push_constant_dynamic(CONTEXT_VARIABLE, context.clone());
        }
        scope.push_dynamic(DOCUMENT_VARIABLE, bound);
        // The script's own value is ignored: only what it left in `doc` counts.
        let _script_value: Dynamic = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut scope, &self.ast)
            .map_err(|error| {
                edition_error(
                    &self.index_uid,
                    format!(
                        "Document edition runtime error encountered while running the function: {error}"
                    ),
                )
            })?;
        let result = scope
            .remove::<Dynamic>(DOCUMENT_VARIABLE)
            .ok_or_else(|| ResponseError::internal("the script's scope lost `doc`"))?;
        if result.is_unit() {
            return Ok(Edited::Deleted);
        }
        let Some(map) = result.try_cast::<rhai::Map>() else {
            return Err(edition_error(
                &self.index_uid,
                "Document editions must keep documents as objects".to_owned(),
            ));
        };
        let Value::Object(edited) = serde_json::to_value(&map)
            .map_err(|error| edition_error(&self.index_uid, error.to_string()))?
        else {
            return Err(ResponseError::internal("a Rhai map became a non-object"));
        };
        if Value::Object(edited.clone()) == original {
            return Ok(Edited::Unchanged);
        }
        self.check_primary_key(document, &edited)?;
        Ok(Edited::Replaced(in_original_order(document, edited)))
    }

    /// Refuses an edited document whose id is not the original one.
    fn check_primary_key(
        &self,
        original: &Map<String, Value>,
        edited: &Map<String, Value>,
    ) -> Result<(), ResponseError> {
        let with_index = |error: ResponseError| ResponseError {
            message: format!("Index `{}`: {}", self.index_uid, error.message),
            ..error
        };
        let before = extract_document_id(original, &self.primary_key)
            .map_err(|error| with_index(documents_error(error)))?;
        let after = extract_document_id(edited, &self.primary_key)
            .map_err(|error| with_index(documents_error(error)))?;
        if before != after {
            return Err(edition_error(
                &self.index_uid,
                "Document editions cannot modify a document's primary key".to_owned(),
            ));
        }
        Ok(())
    }
}

/// `edited` with the fields of `original` first, in their order, then the new ones.
fn in_original_order(
    original: &Map<String, Value>,
    mut edited: Map<String, Value>,
) -> Map<String, Value> {
    let mut ordered = Map::with_capacity(edited.len());
    for key in original.keys() {
        if let Some(value) = edited.remove(key) {
            ordered.insert(key.clone(), value);
        }
    }
    ordered.extend(edited);
    ordered
}

/// 400 `edit_documents_by_function_error`, with the index prefix of task errors.
fn edition_error(index_uid: &str, message: String) -> ResponseError {
    ResponseError::new(
        Code::EditDocumentsByFunctionError,
        format!("Index `{index_uid}`: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn edition(function: &str, context: Option<Value>) -> Edition {
        Edition::new(&EditionRequest {
            index_uid: "books".to_owned(),
            function: function.to_owned(),
            context: context.and_then(|value| value.as_object().cloned()),
            primary_key: "id".to_owned(),
        })
        .expect("the test script compiles")
    }

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object literal")
    }

    #[test]
    fn an_edited_document_keeps_its_key_order_and_appends_new_fields() {
        let edited = edition(
            "doc.title = `${doc.title}!`; doc.added = context.n",
            Some(json!({"n": 3})),
        )
        .edit(&object(json!({"id": 1, "title": "a", "body": "b"})))
        .expect("the script runs");
        let Edited::Replaced(document) = edited else {
            panic!("expected a replacement, got {edited:?}");
        };
        assert_eq!(
            Value::Object(document).to_string(),
            r#"{"id":1,"title":"a!","body":"b","added":3}"#
        );
    }

    #[test]
    fn unit_deletes_and_untouched_documents_are_unchanged() {
        let document = object(json!({"id": 1, "n": 1.5, "tags": ["x", {"y": null}]}));
        assert_eq!(
            edition("doc = ()", None).edit(&document),
            Ok(Edited::Deleted)
        );
        assert_eq!(
            edition("let x = 1;", None).edit(&document),
            Ok(Edited::Unchanged)
        );
    }

    #[test]
    fn changing_the_primary_key_is_refused() {
        let error = edition("doc.id = 2", None)
            .edit(&object(json!({"id": 1})))
            .expect_err("the id changed");
        assert_eq!(error.code, Code::EditDocumentsByFunctionError);
        assert_eq!(
            error.message,
            "Index `books`: Document editions cannot modify a document's primary key"
        );
    }

    #[test]
    fn runtime_errors_and_runaway_scripts_fail_with_the_edition_code() {
        let document = object(json!({"id": 1}));
        let thrown = edition("throw \"boom\"", None)
            .edit(&document)
            .expect_err("the script throws");
        assert_eq!(
            thrown.message,
            "Index `books`: Document edition runtime error encountered while running the function: Runtime error: boom (line 1, position 1)"
        );
        let endless = edition("loop { }", None)
            .edit(&document)
            .expect_err("the operation limit stops the loop");
        assert!(
            endless.message.contains("Too many operations"),
            "{}",
            endless.message
        );
        let not_object = edition("doc = 3", None)
            .edit(&document)
            .expect_err("a document must stay an object");
        assert_eq!(
            not_object.message,
            "Index `books`: Document editions must keep documents as objects"
        );
    }

    #[test]
    fn recursion_runs_to_the_call_depth_limit_and_stops_there() {
        let document = object(json!({"id": 1}));
        let recursive = |depth: usize| {
            format!(
                "fn down(n) {{ if n == 0 {{ 0 }} else {{ down(n - 1) + 1 }} }} doc.depth = down({depth});"
            )
        };
        let within = edition(&recursive(SCRIPT_CALL_DEPTH_MAX - 2), None)
            .edit(&document)
            .expect("recursion within the limit runs");
        assert!(matches!(within, Edited::Replaced(_)), "{within:?}");
        let beyond = edition(&recursive(SCRIPT_CALL_DEPTH_MAX * 4), None)
            .edit(&document)
            .expect_err("recursion past the limit is an error, not a stack overflow");
        assert_eq!(beyond.code, Code::EditDocumentsByFunctionError);
    }

    #[test]
    fn a_script_that_does_not_compile_is_a_bad_request() {
        let error = check_compiles("doc.x = ").expect_err("incomplete script");
        assert_eq!(error.code, Code::BadRequest);
        assert_eq!(error.message, "Script is incomplete (line 1, position 9)");
        assert!(check_compiles("doc.x = 1").is_ok());
    }
}
