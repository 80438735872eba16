//! Authorization of a request against the route's actions: the master key, API keys and
//! tenant tokens of [`crate::auth`], checked against this core's replica of the key set —
//! so authorizing never leaves the core, and a key deleted on the control core stops
//! working here as soon as its broadcast arrived (before the deletion was acknowledged).

use time::OffsetDateTime;

use crate::auth::{Action, AuthContext, AuthRequest, authenticate};
use crate::errors::ResponseError;
use crate::http::Request;
use crate::routes::Services;

/// Checks that `request` may call a route requiring every action of `actions` (none: public
/// route) on index `index_uid` (the route's `{index_uid}` parameter, if any).
///
/// The actions are authenticated one after the other, as Meilisearch's double-action policy
/// does: the first refusal is the answer, and the context of the first action is the
/// request's (every action is checked against the same key, so they agree).
pub fn authorize(
    services: &Services,
    request: &Request,
    actions: &[Action],
    index_uid: Option<&str>,
) -> Result<AuthContext, ResponseError> {
    let Some((first, others)) = actions.split_first() else {
        return Ok(AuthContext::full_access());
    };
    let keys = services.control.keys();
    let now = OffsetDateTime::now_utc();
    let check = |action: Action| {
        let auth_request = AuthRequest {
            authorization: request.headers.get("authorization"),
            action,
            index_uid,
        };
        authenticate(&keys, &auth_request, now).map_err(ResponseError::from)
    };
    let context = check(*first)?;
    for &action in others {
        check(action)?;
    }
    Ok(context)
}
