//! `GET /experimental-features` and `PATCH /experimental-features`: synchronous, persisted.

use crate::control::features::FeaturesPatch;
use crate::decode::JsonError;
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::routes::{Services, body};

/// `GET /experimental-features`.
pub fn get(services: &Services) -> Response {
    Response::json(200, services.control.features().to_json())
}

/// `PATCH /experimental-features`: any subset of the thirteen toggles, each a boolean or
/// `null` (left unchanged); answers the whole new set.
pub async fn patch(services: &Services, request: Request) -> Result<Response, ResponseError> {
    let patch: FeaturesPatch = body::json::<FeaturesPatch, JsonError>(&request)?;
    let features = services.control.patch_features(patch).await?;
    Ok(Response::json(200, features.to_json()))
}
