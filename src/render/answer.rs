//! The answer of `POST /render-template`: the template (unrendered) and, when the request
//! has an input, the template rendered with it (`null` otherwise).
//!
//! Invariant: the template is found before the input (so its errors win), and a stored
//! document is fetched from the shard that owns its id only once every check passed.

use std::rc::Rc;

use serde_json::{Value, json};

use super::error::FetchInputError;
use super::input::{Input, InputPlan, plan_input};
use super::rendering::render;
use super::request::RenderRequest;
use super::template::{FoundTemplate, find_template};
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::documents::get::get_document;
use crate::errors::ResponseError;

/// `{"template": …, "rendered": …}` for `request`.
pub async fn answer(
    request: &RenderRequest,
    features: RuntimeFeatures,
    coordinator: &Rc<Coordinator>,
) -> Result<Value, ResponseError> {
    let lookup = |uid: &str| coordinator.index(uid).ok();
    let found = find_template(&request.template, features, &lookup)?;
    let rendered = match &request.input {
        Some(input) => {
            let plan = plan_input(input, features, found.index.as_ref(), &lookup)?;
            let input = fetched(plan, coordinator).await?;
            render(&found.template, &input)?
        }
        None => Value::Null,
    };
    Ok(body(&found, rendered))
}

/// The answer's body.
fn body(found: &FoundTemplate, rendered: Value) -> Value {
    json!({"template": found.template.source(), "rendered": rendered})
}

/// The input of `plan`, its stored document fetched.
async fn fetched(plan: InputPlan, coordinator: &Rc<Coordinator>) -> Result<Input, ResponseError> {
    let (record, id) = match plan {
        InputPlan::Ready(input) => return Ok(input),
        InputPlan::Stored { record, id } => (record, id),
    };
    let document = get_document(coordinator, &record, &id, None, false)
        .await
        .map_err(FetchInputError::Stored)?
        .ok_or_else(|| FetchInputError::DocumentNotFound {
            index: record.uid.clone(),
            id,
        })?;
    Ok(Input::Document {
        document,
        searchable: record.settings.searchable_attributes.clone(),
    })
}
