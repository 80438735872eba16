//! Authorization of a request against the route's action.
//!
//! This is the seam the API-key layer plugs into: today it checks the master key only
//! (every route but the public ones needs `Authorization: Bearer <master key>` when a
//! master key is set); the keys, actions and tenant tokens of `crate::auth` replace the
//! body of [`authorize`] without changing its callers.

use subtle::ConstantTimeEq;

use crate::errors::ResponseError;
use crate::http::Request;
use crate::routes::Services;

/// Checks that `request` may call a route requiring `action` (`None`: public route).
pub fn authorize(
    services: &Services,
    request: &Request,
    action: Option<&'static str>,
) -> Result<(), ResponseError> {
    let Some(_action) = action else {
        return Ok(());
    };
    let token = bearer_token(request)?;
    let Some(master_key) = services.master_key.as_deref() else {
        return Ok(());
    };
    match token {
        None => Err(ResponseError::missing_authorization_header()),
        Some(token) if bool::from(token.as_bytes().ct_eq(master_key.as_bytes())) => Ok(()),
        Some(_) => Err(ResponseError::invalid_api_key()),
    }
}

/// The token of an `Authorization: Bearer <token>` header, `None` when there is no header.
/// A header that does not use the bearer scheme is refused even without a master key, and
/// a bearer without a token is an invalid key (reference §4.5).
fn bearer_token(request: &Request) -> Result<Option<&str>, ResponseError> {
    let Some(header) = request.headers.get("authorization") else {
        return Ok(None);
    };
    let header = std::str::from_utf8(header).map_err(|_| ResponseError::invalid_api_key())?;
    let (scheme, token) = header.split_once(' ').unwrap_or((header, ""));
    if scheme != "Bearer" {
        return Err(ResponseError::missing_authorization_header());
    }
    if token.is_empty() {
        return Err(ResponseError::invalid_api_key());
    }
    Ok(Some(token))
}
