//! The experimental features `POST /render-template` needs: `renderRoute` for the route
//! itself, `chatCompletions` for the chat template, `multimodal` for every fragment and for
//! search queries, each refused with Meilisearch's `feature_not_enabled` wording.

use super::request::{InputKind, TemplateKind};
use crate::control::features::RuntimeFeatures;
use crate::errors::ResponseError;

/// The discussion the `renderRoute` refusal points to.
const RENDER_ROUTE_LINK: &str = "https://github.com/orgs/meilisearch/discussions/888";
/// The discussion the `chatCompletions` refusal points to.
const CHAT_COMPLETIONS_LINK: &str = "https://github.com/orgs/meilisearch/discussions/835";
/// The discussion the `multimodal` refusals point to.
const MULTIMODAL_LINK: &str = "https://github.com/orgs/meilisearch/discussions/846";

/// The route's own gate.
pub fn check_render_route(features: RuntimeFeatures) -> Result<(), ResponseError> {
    if features.render_route {
        Ok(())
    } else {
        Err(ResponseError::feature_not_enabled(
            "calling the /render-template route",
            "render_route",
            RENDER_ROUTE_LINK,
        ))
    }
}

/// The gate of a template kind, checked before its fields.
pub fn check_template_kind(
    kind: TemplateKind,
    features: RuntimeFeatures,
) -> Result<(), ResponseError> {
    match kind {
        TemplateKind::ChatDocumentTemplate if !features.chat_completions => {
            Err(ResponseError::feature_not_enabled(
                "accessing chat settings",
                "chat completions",
                CHAT_COMPLETIONS_LINK,
            ))
        }
        TemplateKind::IndexingFragment | TemplateKind::SearchFragment if !features.multimodal => {
            Err(multimodal("accessing fragments"))
        }
        TemplateKind::InlineFragment if !features.multimodal => {
            Err(multimodal("rendering an inline fragment"))
        }
        _ => Ok(()),
    }
}

/// The gate of an input kind, checked before its fields.
pub fn check_input_kind(kind: InputKind, features: RuntimeFeatures) -> Result<(), ResponseError> {
    match kind {
        InputKind::InlineSearch if !features.multimodal => Err(multimodal("rendering search")),
        _ => Ok(()),
    }
}

fn multimodal(action: &str) -> ResponseError {
    ResponseError::feature_not_enabled(action, "multimodal", MULTIMODAL_LINK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Code;

    #[test]
    fn each_gate_opens_with_its_feature_only() {
        let off = RuntimeFeatures::default();
        let error = check_render_route(off).expect_err("off");
        assert_eq!(error.code, Code::FeatureNotEnabled);
        assert_eq!(
            error.message,
            "calling the /render-template route requires enabling the `render_route` \
             experimental feature. See https://github.com/orgs/meilisearch/discussions/888"
        );
        let chat = check_template_kind(TemplateKind::ChatDocumentTemplate, off).expect_err("off");
        assert_eq!(
            chat.message,
            "accessing chat settings requires enabling the `chat completions` experimental \
             feature. See https://github.com/orgs/meilisearch/discussions/835"
        );
        assert!(check_template_kind(TemplateKind::DocumentTemplate, off).is_ok());
        assert!(check_template_kind(TemplateKind::InlineDocumentTemplate, off).is_ok());
        assert!(check_input_kind(InputKind::InlineSearch, off).is_err());
        assert!(check_input_kind(InputKind::IndexDocument, off).is_ok());
        let on = RuntimeFeatures {
            render_route: true,
            chat_completions: true,
            multimodal: true,
            ..RuntimeFeatures::default()
        };
        assert!(check_render_route(on).is_ok());
        for kind in [
            TemplateKind::ChatDocumentTemplate,
            TemplateKind::IndexingFragment,
            TemplateKind::SearchFragment,
            TemplateKind::InlineFragment,
        ] {
            assert!(check_template_kind(kind, on).is_ok(), "{kind}");
            assert!(check_template_kind(kind, off).is_err(), "{kind}");
        }
        assert!(check_input_kind(InputKind::InlineSearch, on).is_ok());
    }
}
