//! `POST /render-template` (feature `renderRoute`): the template an index (or the request)
//! holds, rendered with a document or a search query (see [`crate::render`]).
//!
//! Invariants, in Meilisearch 1.50's order (its extractors run before its handler): the key
//! must hold both `settings.get` and `documents.get` (the route table names both), then the
//! body is decoded, then the feature gate, then the key must reach every index the body
//! names (the template's and the input's, whatever their kinds) or the answer is a plain
//! `invalid_api_key`; only then is anything looked up.

use crate::auth::AuthContext;
use crate::decode::JsonError;
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::render::answer::answer;
use crate::render::gates::check_render_route;
use crate::render::request::RenderRequest;
use crate::routes::{Services, body};

/// `POST /render-template`.
pub async fn render_template(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let render: RenderRequest = body::json::<RenderRequest, JsonError>(request)?;
    let features = services.control.features();
    check_render_route(features)?;
    check_index_access(context, &render)?;
    let answer = answer(&render, features, &services.coordinator).await?;
    Ok(Response::json(200, answer.to_string()))
}

/// Refuses a key that cannot reach an index the body names.
fn check_index_access(context: &AuthContext, render: &RenderRequest) -> Result<(), ResponseError> {
    let template_index = render.template.index_uid.as_deref();
    let input_index = render
        .input
        .as_ref()
        .and_then(|input| input.index_uid.as_deref());
    let reachable = [template_index, input_index]
        .into_iter()
        .flatten()
        .all(|uid| context.is_index_authorized(uid));
    if reachable {
        Ok(())
    } else {
        Err(ResponseError::invalid_api_key())
    }
}
