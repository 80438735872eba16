//! How far an action's reach can be narrowed by a key's `indexes`: the rule that keeps a key
//! restricted to some indexes from acting on anything that is not one of them.
//!
//! Every action falls in one of four scopes:
//! - [`IndexScope::Global`]: the action is about the whole instance (keys, experimental
//!   features, dumps, snapshots, export, network, webhooks, metrics, logs, chats, version,
//!   task-queue compaction). Only a key whose `indexes` cover every index (`*`, or no
//!   restriction) may perform it; a key restricted to some indexes cannot be created with it
//!   (`index_scoped_api_key_with_global_action`), and a stored one is refused at use;
//! - [`IndexScope::RouteFilters`]: the action also runs on routes that name no index in
//!   their path (`GET /indexes`, `POST /indexes`, `/stats`, `/multi-search`,
//!   `/swap-indexes`, `/tasks`, `/batches`); those routes narrow their work to the
//!   request's authorized indexes themselves (they refuse a named index the key does not
//!   cover, or leave it out of their listing);
//! - [`IndexScope::PathIndex`]: the action only runs on routes with `{index_uid}` in their
//!   path, where authentication itself checks the index; on any other route a restricted key
//!   is refused;
//! - [`IndexScope::Several`]: a wildcard action that expands into actions of several scopes;
//!   it is never itself a route's action, and each expanded action keeps its own scope.
//!
//! Invariant: a restricted key passes authentication on a route naming no index only with
//! an action of scope [`IndexScope::RouteFilters`]; [`crate::auth::KeySet::is_key_authorized`]
//! enforces it, and the route-matrix test checks every route with keys scoped to the route's
//! index, to another index and to `*`. Meilisearch 1.41 let restricted keys through on
//! every such route (a restricted `*` key could read the admin key's secret); upstream closed
//! the hole in 1.48.3 with the same four-way division.

use super::actions::Action;

/// The reach of an action under a key restricted to some indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexScope {
    /// About the whole instance: only keys covering every index.
    Global,
    /// Runs on routes without an index in their path that filter by the authorized indexes.
    RouteFilters,
    /// Runs only on routes whose path names the index.
    PathIndex,
    /// A wildcard expanding into actions of several scopes.
    Several,
}

impl Action {
    /// The action's [`IndexScope`].
    pub fn index_scope(self) -> IndexScope {
        use Action::*;
        match self {
            All | AllGet | DocumentsAll | IndexesAll | TasksAll | SettingsAll => {
                IndexScope::Several
            }
            // `documents.get` and `settings.get` stay route-filtered as upstream keeps them
            // (its template rendering reads them without an index in the path).
            Search | DocumentsGet | SettingsGet | IndexesCreate | IndexesGet | IndexesSwap
            | TasksCancel | TasksDelete | TasksGet | StatsAll | StatsGet | ChatCompletions => {
                IndexScope::RouteFilters
            }
            DocumentsAdd | DocumentsDelete | IndexesUpdate | IndexesDelete | IndexesCompact
            | FieldsPost | SettingsUpdate => IndexScope::PathIndex,
            TasksCompact
            | MetricsAll
            | MetricsGet
            | DumpsAll
            | DumpsCreate
            | SnapshotsAll
            | SnapshotsCreate
            | Version
            | KeysCreate
            | KeysGet
            | KeysUpdate
            | KeysDelete
            | ExperimentalGet
            | ExperimentalUpdate
            | Export
            | NetworkGet
            | NetworkUpdate
            | ChatsAll
            | ChatsGet
            | ChatsDelete
            | ChatsSettingsAll
            | ChatsSettingsGet
            | ChatsSettingsUpdate
            | WebhooksGet
            | WebhooksUpdate
            | WebhooksDelete
            | WebhooksCreate
            | WebhooksAll
            | DynamicSearchRulesGet
            | DynamicSearchRulesCreate
            | DynamicSearchRulesUpdate
            | DynamicSearchRulesDelete
            | DynamicSearchRulesAll => IndexScope::Global,
        }
    }

    /// Whether a key restricted to some indexes may never hold the action.
    pub fn is_global(self) -> bool {
        self.index_scope() == IndexScope::Global
    }

    /// Whether the action may run, under a restricted key, on a route naming no index.
    pub fn is_route_filtered(self) -> bool {
        self.index_scope() == IndexScope::RouteFilters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::actions::ActionSet;

    /// The scopes of the single-scoped actions a wildcard grants (itself left out).
    fn member_scopes(action: Action) -> Vec<IndexScope> {
        let mut scopes: Vec<IndexScope> = ActionSet::expand(&[action])
            .iter()
            .filter(|&granted| granted != action)
            .map(Action::index_scope)
            .filter(|&scope| scope != IndexScope::Several)
            .collect();
        scopes.sort_by_key(|scope| *scope as u8);
        scopes.dedup();
        scopes
    }

    #[test]
    fn a_wildcard_is_several_exactly_when_its_members_differ_in_scope() {
        for &action in Action::ALL {
            let scopes = member_scopes(action);
            match action.index_scope() {
                IndexScope::Several => assert!(scopes.len() > 1, "{action}: {scopes:?}"),
                own => assert!(
                    scopes.iter().all(|&scope| scope == own),
                    "{action} is {own:?}, its members {scopes:?}"
                ),
            }
        }
    }

    #[test]
    fn the_instance_wide_actions_are_global() {
        for action in [
            Action::KeysGet,
            Action::KeysCreate,
            Action::ExperimentalUpdate,
            Action::DumpsCreate,
            Action::SnapshotsCreate,
            Action::Export,
            Action::NetworkUpdate,
            Action::WebhooksGet,
            Action::MetricsGet,
            Action::Version,
            Action::TasksCompact,
        ] {
            assert!(action.is_global(), "{action}");
        }
        assert!(Action::Search.is_route_filtered());
        assert!(!Action::DocumentsAdd.is_route_filtered());
        assert!(!Action::DocumentsAdd.is_global());
    }
}
