//! API-key actions: every action Meilisearch 1.41 knows, its wire name, whether it is a
//! "read" action (included in `*.get`), and the expansion of wildcard actions into the set
//! of concrete actions a key really holds.
//!
//! Invariants:
//! - [`Action::ALL`] lists the actions in declaration order, which is both the order of the
//!   "expected one of" list in the error for an unknown action and the order of
//!   [`Action::repr`] (the index in that list);
//! - expansion follows Meilisearch: `*` grants every action except `*.get` (including the
//!   `x.*` actions themselves), `*.get` grants every read action, and an `x.*` action grants
//!   the concrete actions of its family but NOT itself (so only `*` keys and the master key
//!   pass a route guarded by `documents.*`).

use std::fmt;

/// Declares the action enum and its table: variant, wire name, read flag.
macro_rules! actions {
    ($($variant:ident => $wire:literal, $read:literal;)*) => {
        /// One action an API key can be granted.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action {
            $($variant,)*
        }

        impl Action {
            /// Every action, in declaration order.
            pub const ALL: &'static [Action] = &[$(Action::$variant,)*];

            /// The wire name of the action, as it appears in a key's `actions`.
            pub fn wire_name(self) -> &'static str {
                match self {
                    $(Action::$variant => $wire,)*
                }
            }

            /// Whether `*.get` grants this action. Wildcards are never read actions.
            pub fn is_read(self) -> bool {
                match self {
                    $(Action::$variant => $read,)*
                }
            }

            /// The action with this exact wire name (case-sensitive), if any.
            pub fn from_wire_name(name: &str) -> Option<Action> {
                match name {
                    $($wire => Some(Action::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

actions! {
    All => "*", false;
    Search => "search", true;
    DocumentsAll => "documents.*", false;
    DocumentsAdd => "documents.add", false;
    DocumentsGet => "documents.get", true;
    DocumentsDelete => "documents.delete", false;
    IndexesAll => "indexes.*", false;
    IndexesCreate => "indexes.create", false;
    IndexesGet => "indexes.get", true;
    IndexesUpdate => "indexes.update", false;
    IndexesDelete => "indexes.delete", false;
    IndexesSwap => "indexes.swap", false;
    TasksAll => "tasks.*", false;
    TasksCancel => "tasks.cancel", false;
    TasksDelete => "tasks.delete", false;
    TasksGet => "tasks.get", true;
    SettingsAll => "settings.*", false;
    SettingsGet => "settings.get", true;
    SettingsUpdate => "settings.update", false;
    StatsAll => "stats.*", false;
    StatsGet => "stats.get", true;
    MetricsAll => "metrics.*", false;
    MetricsGet => "metrics.get", true;
    DumpsAll => "dumps.*", false;
    DumpsCreate => "dumps.create", false;
    SnapshotsAll => "snapshots.*", false;
    SnapshotsCreate => "snapshots.create", false;
    Version => "version", true;
    KeysCreate => "keys.create", false;
    // Not a read action: a read-only key must not be able to read other keys' secrets.
    KeysGet => "keys.get", false;
    KeysUpdate => "keys.update", false;
    KeysDelete => "keys.delete", false;
    ExperimentalGet => "experimental.get", true;
    ExperimentalUpdate => "experimental.update", false;
    Export => "export", true;
    NetworkGet => "network.get", true;
    NetworkUpdate => "network.update", false;
    // Not a read action: it may create chats.
    ChatCompletions => "chatCompletions", false;
    ChatsAll => "chats.*", false;
    ChatsGet => "chats.get", true;
    ChatsDelete => "chats.delete", false;
    ChatsSettingsAll => "chatsSettings.*", false;
    ChatsSettingsGet => "chatsSettings.get", true;
    ChatsSettingsUpdate => "chatsSettings.update", false;
    AllGet => "*.get", false;
    WebhooksGet => "webhooks.get", true;
    WebhooksUpdate => "webhooks.update", false;
    WebhooksDelete => "webhooks.delete", false;
    WebhooksCreate => "webhooks.create", false;
    WebhooksAll => "webhooks.*", false;
    IndexesCompact => "indexes.compact", false;
    FieldsPost => "fields.post", true;
    TasksCompact => "tasks.compact", false;
    DynamicSearchRulesGet => "dynamicSearchRules.get", true;
    DynamicSearchRulesCreate => "dynamicSearchRules.create", false;
    DynamicSearchRulesUpdate => "dynamicSearchRules.update", false;
    DynamicSearchRulesDelete => "dynamicSearchRules.delete", false;
    DynamicSearchRulesAll => "dynamicSearchRules.*", false;
}

/// The number of actions; an [`ActionSet`] stores one bit per action.
pub const ACTION_COUNT: usize = Action::ALL.len();

const _: () = assert!(
    ACTION_COUNT <= u64::BITS as usize,
    "an ActionSet is a u64 bitmap"
);

impl Action {
    /// The position of the action in [`Action::ALL`] (Meilisearch's repr byte).
    pub fn repr(self) -> u8 {
        self as u8
    }

    /// The concrete actions a wildcard family action grants; `None` for non-family actions.
    fn family(self) -> Option<&'static [Action]> {
        use Action::*;
        let members: &'static [Action] = match self {
            DocumentsAll => &[DocumentsGet, DocumentsDelete, DocumentsAdd],
            IndexesAll => &[
                IndexesCreate,
                IndexesDelete,
                IndexesGet,
                IndexesUpdate,
                IndexesSwap,
                IndexesCompact,
            ],
            SettingsAll => &[SettingsGet, SettingsUpdate],
            DumpsAll => &[DumpsCreate],
            SnapshotsAll => &[SnapshotsCreate],
            TasksAll => &[TasksGet, TasksDelete, TasksCancel, TasksCompact],
            StatsAll => &[StatsGet],
            MetricsAll => &[MetricsGet],
            ChatsAll => &[ChatsGet, ChatsDelete],
            ChatsSettingsAll => &[ChatsSettingsGet, ChatsSettingsUpdate],
            WebhooksAll => &[WebhooksGet, WebhooksUpdate, WebhooksDelete, WebhooksCreate],
            DynamicSearchRulesAll => &[
                DynamicSearchRulesGet,
                DynamicSearchRulesCreate,
                DynamicSearchRulesUpdate,
                DynamicSearchRulesDelete,
            ],
            _ => return None,
        };
        Some(members)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.wire_name())
    }
}

/// A set of actions, one bit per action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ActionSet(u64);

impl ActionSet {
    /// The empty set.
    pub const EMPTY: ActionSet = ActionSet(0);

    /// Adds one action.
    pub fn insert(&mut self, action: Action) {
        self.0 |= 1 << action.repr();
    }

    /// Removes one action.
    pub fn remove(&mut self, action: Action) {
        self.0 &= !(1 << action.repr());
    }

    /// Whether the set holds the action.
    pub fn contains(self, action: Action) -> bool {
        self.0 & (1 << action.repr()) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The actions of the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Action> {
        Action::ALL
            .iter()
            .copied()
            .filter(move |action| self.contains(*action))
    }

    /// The actions a key given `actions` really holds, wildcards expanded as Meilisearch
    /// expands them when it stores a key.
    pub fn expand(actions: &[Action]) -> ActionSet {
        let mut set = ActionSet::EMPTY;
        for &action in actions {
            match action {
                Action::All => {
                    for &every in Action::ALL {
                        set.insert(every);
                    }
                    set.remove(Action::AllGet);
                }
                Action::AllGet => {
                    for &read in Action::ALL.iter().filter(|action| action.is_read()) {
                        set.insert(read);
                    }
                }
                other => match other.family() {
                    Some(members) => members.iter().for_each(|member| set.insert(*member)),
                    None => set.insert(other),
                },
            }
        }
        set
    }
}

/// The "expected one of" list of an unknown action error: every wire name, backquoted,
/// comma separated, in declaration order.
pub fn expected_action_list() -> String {
    Action::ALL
        .iter()
        .map(|action| format!("`{}`", action.wire_name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every wire name, in declaration order.
pub fn wire_names() -> Vec<&'static str> {
    Action::ALL
        .iter()
        .map(|action| action.wire_name())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn repr_numbers_match_meilisearch() {
        assert_eq!(ACTION_COUNT, 58);
        assert_eq!(Action::All.repr(), 0);
        assert_eq!(Action::Version.repr(), 27);
        assert_eq!(Action::KeysGet.repr(), 29);
        assert_eq!(Action::ChatCompletions.repr(), 37);
        assert_eq!(Action::AllGet.repr(), 44);
        assert_eq!(Action::WebhooksAll.repr(), 49);
        assert_eq!(Action::FieldsPost.repr(), 51);
        assert_eq!(Action::DynamicSearchRulesAll.repr(), 57);
        for (position, action) in Action::ALL.iter().enumerate() {
            assert_eq!(usize::from(action.repr()), position);
        }
    }

    #[test]
    fn wire_names_round_trip_and_are_case_sensitive() {
        for &action in Action::ALL {
            assert_eq!(Action::from_wire_name(action.wire_name()), Some(action));
        }
        assert_eq!(Action::from_wire_name("Search"), None);
        assert_eq!(Action::from_wire_name("keys.*"), None);
        assert_eq!(Action::from_wire_name("doc.add"), None);
    }

    #[test]
    fn star_grants_everything_but_star_get_including_family_wildcards() {
        let set = ActionSet::expand(&[Action::All]);
        for &action in Action::ALL {
            assert_eq!(set.contains(action), action != Action::AllGet, "{action}");
        }
    }

    #[test]
    fn star_get_grants_exactly_the_read_actions() {
        let set = ActionSet::expand(&[Action::AllGet]);
        let granted: Vec<_> = set.iter().map(Action::wire_name).collect();
        assert_eq!(
            granted,
            [
                "search",
                "documents.get",
                "indexes.get",
                "tasks.get",
                "settings.get",
                "stats.get",
                "metrics.get",
                "version",
                "experimental.get",
                "export",
                "network.get",
                "chats.get",
                "chatsSettings.get",
                "webhooks.get",
                "fields.post",
                "dynamicSearchRules.get",
            ]
        );
        assert!(!set.contains(Action::KeysGet));
        assert!(!set.contains(Action::ChatCompletions));
    }

    #[test]
    fn family_wildcards_grant_members_but_not_themselves() {
        let set = ActionSet::expand(&[Action::DocumentsAll]);
        let granted: Vec<_> = set.iter().collect();
        assert_eq!(
            granted,
            [
                Action::DocumentsAdd,
                Action::DocumentsGet,
                Action::DocumentsDelete
            ]
        );
        let indexes = ActionSet::expand(&[Action::IndexesAll]);
        assert_eq!(indexes.iter().count(), 6);
        assert!(indexes.contains(Action::IndexesCompact));
        assert!(!indexes.contains(Action::IndexesAll));
        let tasks = ActionSet::expand(&[Action::TasksAll]);
        assert!(tasks.contains(Action::TasksCompact));
        assert_eq!(tasks.iter().count(), 4);
        let rules = ActionSet::expand(&[Action::DynamicSearchRulesAll]);
        assert_eq!(rules.iter().count(), 4);
        let webhooks = ActionSet::expand(&[Action::WebhooksAll]);
        assert_eq!(webhooks.iter().count(), 4);
    }

    #[test]
    fn concrete_actions_expand_to_themselves() {
        let set = ActionSet::expand(&[Action::Search, Action::KeysGet, Action::Search]);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Action::Search, Action::KeysGet]
        );
    }

    #[test]
    fn expected_list_starts_and_ends_like_meilisearch() {
        let list = expected_action_list();
        assert!(list.starts_with("`*`, `search`, `documents.*`, `documents.add`"));
        assert!(list.ends_with("`dynamicSearchRules.delete`, `dynamicSearchRules.*`"));
    }
}
