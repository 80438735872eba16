//! `/chats` (feature `chatCompletions`): list the workspaces (`GET /chats`, `offset`,
//! `limit`), read or delete one (`GET`/`DELETE /chats/{workspace_uid}`), read, patch (which
//! creates the workspace) or reset its settings (`/chats/{workspace_uid}/settings`), and
//! `POST /chats/{workspace_uid}/chat/completions`, a streamed chat completion (server-sent
//! events) whose model searches the indexes the caller may see.
//!
//! Invariants, in Meilisearch 1.41's order (its extractors run before its handlers): the key
//! first, then the query string or the body, then the feature gate, then the rest. The
//! settings answers mask the API key. A completion that does not stream is refused with
//! `unimplemented_non_streaming_chat_completions`, one asking for several choices with
//! `unimplemented_multi_choice_chat_completions` (both 501).

use deserr::Deserr;
use serde_json::json;

use crate::auth::AuthContext;
use crate::auth::index_pattern::is_valid_index_uid;
use crate::chats::context::ChatContext;
use crate::control::chat_workspaces::{
    ChatWorkspaceSettings, WorkspaceChange, WorkspaceOutcome, chat_not_found, not_enabled,
    settings_not_found,
};
use crate::decode::{Param, QueryError};
use crate::errors::{Code, ResponseError, codes};
use crate::http::{BodyStream, Request, Response};
use crate::routes::{Services, body};

/// `limit` of a listing when absent.
pub const LIST_LIMIT_DEFAULT: usize = 20;

/// The query string of `GET /chats`.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct ListQuery {
    #[deserr(default = Param(0), error = QueryError<codes::InvalidIndexOffset>)]
    offset: Param<usize>,
    #[deserr(default = Param(LIST_LIMIT_DEFAULT), error = QueryError<codes::InvalidIndexLimit>)]
    limit: Param<usize>,
}

/// `GET /chats`.
pub fn list(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<ListQuery, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    check_enabled(services, "listing the chats")?;
    let (offset, limit) = (query.offset.0, query.limit.0);
    let workspaces = services.control.chat_workspaces();
    let results: Vec<_> = workspaces
        .keys()
        .skip(offset)
        .take(limit)
        .map(|uid| json!({ "uid": uid }))
        .collect();
    let answer = json!({
        "results": results,
        "offset": offset,
        "limit": limit,
        "total": workspaces.len(),
    });
    Ok(Response::json(200, answer.to_string()))
}

/// `GET /chats/{workspace_uid}`.
pub fn get(services: &Services, uid: &str) -> Result<Response, ResponseError> {
    check_enabled(services, "displaying a chat")?;
    if !is_valid_index_uid(uid) {
        return Err(ResponseError::invalid_index_uid(uid));
    }
    if services.control.chat_workspaces().contains_key(uid) {
        Ok(Response::json(200, json!({ "uid": uid }).to_string()))
    } else {
        Err(chat_not_found(uid))
    }
}

/// `DELETE /chats/{workspace_uid}`.
pub async fn delete(services: &Services, uid: &str) -> Result<Response, ResponseError> {
    check_enabled(services, "deleting a chat")?;
    let change = WorkspaceChange::Delete {
        uid: uid.to_owned(),
    };
    services.control.change_chat_workspaces(change).await?;
    Ok(Response::empty(204))
}

/// The action named by the settings routes' feature gate.
const SETTINGS_ACTION: &str = "using the /chats/settings route";

/// `GET /chats/{workspace_uid}/settings`.
pub fn get_settings(services: &Services, uid: &str) -> Result<Response, ResponseError> {
    check_enabled(services, SETTINGS_ACTION)?;
    let workspaces = services.control.chat_workspaces();
    let settings = workspaces.get(uid).ok_or_else(|| settings_not_found(uid))?;
    Ok(Response::json(200, json!(settings.masked()).to_string()))
}

/// `PATCH /chats/{workspace_uid}/settings`: creates the workspace when absent.
pub async fn patch_settings(
    services: &Services,
    request: &Request,
    uid: &str,
) -> Result<Response, ResponseError> {
    let patch: ChatWorkspaceSettings = body::serde_body(request)?;
    check_enabled(services, SETTINGS_ACTION)?;
    let change = WorkspaceChange::Patch {
        uid: uid.to_owned(),
        patch: Box::new(patch),
    };
    settings_answer(services.control.change_chat_workspaces(change).await?, true)
}

/// `DELETE /chats/{workspace_uid}/settings`: the defaults again.
pub async fn reset_settings(services: &Services, uid: &str) -> Result<Response, ResponseError> {
    check_enabled(services, SETTINGS_ACTION)?;
    let change = WorkspaceChange::Reset {
        uid: uid.to_owned(),
    };
    settings_answer(
        services.control.change_chat_workspaces(change).await?,
        false,
    )
}

/// The settings a change left, masked when asked.
fn settings_answer(outcome: WorkspaceOutcome, mask: bool) -> Result<Response, ResponseError> {
    match outcome {
        WorkspaceOutcome::Settings(settings) => {
            let shown = if mask { settings.masked() } else { *settings };
            Ok(Response::json(200, json!(shown).to_string()))
        }
        WorkspaceOutcome::Deleted => Err(ResponseError::internal("a settings change deleted")),
    }
}

/// The action named by the completion route's feature gate.
const COMPLETIONS_ACTION: &str = "using the /chats chat completions route";

/// `POST /chats/{workspace_uid}/chat/completions`.
pub async fn completions(
    services: &Services,
    request: &Request,
    uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let completion = crate::chats::request::decode(body::json_bytes(request)?)?;
    check_enabled(services, COMPLETIONS_ACTION)?;
    if let Some(choices) = completion.choices.filter(|choices| *choices != 1) {
        return Err(ResponseError::new(
            Code::UnimplementedMultiChoiceChatCompletions,
            format!(
                "You tried to specify n = {choices} but only single choices are supported (n = 1)."
            ),
        ));
    }
    if !completion.stream {
        return Err(ResponseError::new(
            Code::UnimplementedNonStreamingChatCompletions,
            "Non-streamed chat completions is not implemented",
        ));
    }
    let settings = services
        .control
        .chat_workspaces()
        .get(uid)
        .cloned()
        .ok_or_else(|| settings_not_found(uid))?;
    let functions = crate::chats::tools::function_support(&completion.tool_names)?;
    let mut body = completion.body;
    let features = services.control.features();
    crate::chats::tools::set_up_request(
        &mut body,
        &services.coordinator,
        context,
        &settings,
        &completion.model,
        features,
    )
    .await;
    let client = crate::outgoing::shared::core_client()
        .ok_or_else(|| ResponseError::internal("no outgoing client on this core"))?;
    let chat = ChatContext {
        coordinator: services.coordinator.clone(),
        search_queue: services.search_queue.clone(),
        control: services.control.clone(),
        client,
        authorization: request.headers.get("authorization").map(<[u8]>::to_vec),
        workspace: uid.to_owned(),
        settings,
        model: completion.model,
        functions,
    };
    let events = crate::chats::start(chat, body);
    Ok(event_stream_response(BodyStream::new(events)))
}

/// The streamed answer, with the headers of Meilisearch's event streams.
fn event_stream_response(stream: BodyStream) -> Response {
    Response::streamed(200, stream)
        .with_header("content-type", "text/event-stream")
        .with_header("x-accel-buffering", "no")
        .with_header("content-encoding", "identity")
        .with_header("cache-control", "no-cache")
}

/// The feature gate of every route, naming `action`.
fn check_enabled(services: &Services, action: &str) -> Result<(), ResponseError> {
    if services.control.features().chat_completions {
        Ok(())
    } else {
        Err(not_enabled(action))
    }
}
