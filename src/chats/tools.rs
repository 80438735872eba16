//! What the model is given besides the client's messages, as Meilisearch 1.41 sets it up:
//! the workspace's system prompt first (under the `system` or `developer` role, as the
//! source and model take it), and one tool, `_meiliSearchInIndex`, whose description lists
//! the indexes the caller may search (each with its `chat.description`) and whose `filter`
//! parameter lists each index's filterable values.
//!
//! The client may declare Meilisearch's reporting functions in `tools`
//! (`_meiliSearchProgress`, `_meiliSearchSources`, `_meiliAppendConversationMessage`):
//! they are taken out of the request and decide what the stream reports. Any other tool is
//! refused (`unimplemented_external_function_calling`), and so is a tool named
//! `_meiliSearchInIndex`.
//!
//! Invariant: the index list holds exactly the indexes the request's key (and tenant token)
//! may reach, in uid order.

use std::fmt::Write as _;
use std::rc::Rc;

use serde_json::{Map, Value, json};

use super::chunks::{
    APPEND_CONVERSATION_MESSAGE_FUNCTION, SEARCH_IN_INDEX_FUNCTION, SEARCH_PROGRESS_FUNCTION,
    SEARCH_SOURCES_FUNCTION,
};
use super::context::FunctionSupport;
use crate::auth::AuthContext;
use crate::control::chat_workspaces::{ChatCompletionPrompts, ChatCompletionSettings, SystemRole};
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::errors::{Code, ResponseError};

/// What the client's `tools` ask for; refuses the tools that cannot be served.
pub fn function_support(tool_names: &[String]) -> Result<FunctionSupport, ResponseError> {
    let mut support = FunctionSupport::default();
    for name in tool_names {
        match name.as_str() {
            SEARCH_IN_INDEX_FUNCTION => {
                return Err(ResponseError::new(
                    Code::BadRequest,
                    format!("{SEARCH_IN_INDEX_FUNCTION} function is already defined."),
                ));
            }
            SEARCH_PROGRESS_FUNCTION => support.report_progress = true,
            SEARCH_SOURCES_FUNCTION => support.report_sources = true,
            APPEND_CONVERSATION_MESSAGE_FUNCTION => support.append_to_conversation = true,
            external => {
                return Err(ResponseError::new(
                    Code::UnimplementedExternalFunctionCalling,
                    format!("{external}: External functions are not supported yet."),
                ));
            }
        }
    }
    Ok(support)
}

/// Sets `body` up for the model: the reporting functions out of `tools`, the search tool in,
/// the system prompt first among the messages.
pub async fn set_up_request(
    body: &mut Map<String, Value>,
    coordinator: &Rc<Coordinator>,
    context: &AuthContext,
    settings: &ChatCompletionSettings,
    model: &str,
    features: RuntimeFeatures,
) {
    let search_tool = search_tool(coordinator, context, &settings.prompts, features).await;
    // Every declared tool is a reporting function (the others were refused).
    body.insert("tools".to_owned(), Value::Array(vec![search_tool]));
    let role = match settings.source.system_role(model) {
        SystemRole::System => "system",
        SystemRole::Developer => "developer",
    };
    let system = json!({"role": role, "content": settings.prompts.system});
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        messages.insert(0, system);
    }
}

/// The `_meiliSearchInIndex` tool, describing the indexes `context` may reach.
async fn search_tool(
    coordinator: &Rc<Coordinator>,
    context: &AuthContext,
    prompts: &ChatCompletionPrompts,
    features: RuntimeFeatures,
) -> Value {
    let catalog = coordinator.catalog();
    let mut records: Vec<_> = catalog
        .iter()
        .filter(|record| context.is_index_authorized(&record.uid))
        .cloned()
        .collect();
    records.sort_by(|left, right| left.uid.cmp(&right.uid));
    let mut description = prompts.search_description.clone();
    let mut filter_description = prompts.search_filter_param.clone();
    let mut index_uids = Vec::with_capacity(records.len());
    for record in &records {
        let uid = &record.uid;
        let index_description = &record.settings.chat_description;
        let _ = writeln!(description, "\n\n - {uid}: {index_description}\n");
        let summary = super::facet_summary::facet_summary(coordinator, record, features).await;
        let _ = writeln!(
            filter_description,
            "\n## Facet distributions of the {uid} index"
        );
        let _ = writeln!(filter_description, "{summary}");
        index_uids.push(uid.clone());
    }
    json!({
        "type": "function",
        "function": {
            "name": SEARCH_IN_INDEX_FUNCTION,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "index_uid": {
                        "type": "string",
                        "enum": index_uids,
                        "description": prompts.search_index_uid_param,
                    },
                    "q": {"type": "string", "description": prompts.search_q_param},
                    "filter": {"type": "string", "description": filter_description},
                },
                "required": ["index_uid", "q", "filter"],
                "additionalProperties": false,
            },
            "strict": true,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn reporting_functions_are_recognized_and_others_refused() {
        let support = function_support(&names(&[
            SEARCH_PROGRESS_FUNCTION,
            APPEND_CONVERSATION_MESSAGE_FUNCTION,
        ]))
        .expect("supported");
        assert!(support.report_progress && support.append_to_conversation);
        assert!(!support.report_sources);
        let refused = function_support(&names(&["get_weather"])).expect_err("external");
        assert_eq!(refused.code, Code::UnimplementedExternalFunctionCalling);
        assert_eq!(
            refused.message,
            "get_weather: External functions are not supported yet."
        );
        let refused = function_support(&names(&[SEARCH_IN_INDEX_FUNCTION])).expect_err("ours");
        assert_eq!(
            refused.message,
            "_meiliSearchInIndex function is already defined."
        );
    }
}
