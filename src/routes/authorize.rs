//! Authorization of a request against the route's action: the master key, API keys and
//! tenant tokens of [`crate::auth`], checked against this core's replica of the key set —
//! so authorizing never leaves the core, and a key deleted on the control core stops
//! working here as soon as its broadcast arrived (before the deletion was acknowledged).

use time::OffsetDateTime;

use crate::auth::{Action, AuthContext, AuthRequest, authenticate};
use crate::errors::ResponseError;
use crate::http::Request;
use crate::routes::Services;

/// Checks that `request` may call a route requiring `action` (`None`: public route) on
/// index `index_uid` (the route's `{index_uid}` parameter, if any).
pub fn authorize(
    services: &Services,
    request: &Request,
    action: Option<Action>,
    index_uid: Option<&str>,
) -> Result<AuthContext, ResponseError> {
    let Some(action) = action else {
        return Ok(AuthContext::full_access());
    };
    let keys = services.control.keys();
    let auth_request = AuthRequest {
        authorization: request.headers.get("authorization"),
        action,
        index_uid,
    };
    authenticate(&keys, &auth_request, OffsetDateTime::now_utc()).map_err(ResponseError::from)
}
