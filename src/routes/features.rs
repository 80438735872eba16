//! `GET /experimental-features` and `PATCH /experimental-features`: synchronous, persisted.

use crate::control::features::FeaturesPatch;
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError};
use crate::http::{Request, Response};
use crate::routes::{Services, body};

/// `GET /experimental-features`.
pub fn get(services: &Services) -> Response {
    Response::json(200, services.control.features().to_json())
}

/// `PATCH /experimental-features`: any subset of the fifteen toggles, each a boolean or
/// `null` (left unchanged); answers the whole new set. A refused patch changes nothing.
pub async fn patch(services: &Services, request: Request) -> Result<Response, ResponseError> {
    let patch: FeaturesPatch = body::json::<FeaturesPatch, JsonError>(&request)?;
    patch
        .check()
        .map_err(|message| ResponseError::new(Code::BadRequest, message.to_owned()))?;
    let features = services.control.patch_features(patch).await?;
    Ok(Response::json(200, features.to_json()))
}
