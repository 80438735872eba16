//! Which attributes a search highlights and crops, and which fields `_formatted` holds, decided
//! once per search from `attributesToHighlight`, `attributesToCrop` and `displayedAttributes`
//! as Meilisearch's `compute_formatted_options` does.
//!
//! Rules: an attribute name counts only if the index knows the field and it is displayed
//! (listed by name in `displayedAttributes`, or every field when that is `*`); `*` selects
//! every displayed attribute; `attr:N` crops `attr` to N words (an unparsable N means
//! `cropLength`), a later entry for the same attribute overriding an earlier one. A leaf value
//! (its dotted path, array indices left out) takes the options of every selected name that is
//! its path, an ancestor of it, or nested under it; the crop length is the one of the
//! shallowest such name. `_formatted` exists only when some name counts, and holds the
//! retrieved attributes plus the selected ones.
//!
//! Invariant: the plan depends only on the options and the index's fields, never on a hit.

use super::render::TextFormat;
use super::{FieldVisibility, FormatOptions};

/// Separator of nested field names.
const PATH_SEPARATOR: char = '.';
/// Separator of `attr:N` in `attributesToCrop`.
const CROP_LENGTH_SEPARATOR: char = ':';
/// The attribute selector meaning every displayed attribute.
const WILDCARD: &str = "*";

/// A crop length and where it was set in `attributesToCrop` (later ones win).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CropSetting {
    length: usize,
    order: usize,
}

/// Whether `name` is `path` or an ancestor of it (Meilisearch's `contained_in(path, name)`).
pub fn is_under(path: &str, name: &str) -> bool {
    path.strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(PATH_SEPARATOR))
}

/// Whether one of `a` and `b` is the other or nested under it.
fn related(a: &str, b: &str) -> bool {
    is_under(a, b) || is_under(b, a)
}

/// `path` and its ancestors, the shallowest first: `a`, `a.b`, `a.b.c`.
fn ancestors_or_self(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices(PATH_SEPARATOR)
        .map(|(index, _)| &path[..index])
        .chain(std::iter::once(path))
}

/// The formatting decided for one search.
#[derive(Debug, Clone, Default)]
pub struct FormatPlan {
    /// Displayed field names the index knows; `None`: every field.
    displayed: Option<Vec<String>>,
    highlight_all: bool,
    highlight: Vec<String>,
    crop_all: Option<CropSetting>,
    crop: Vec<(String, CropSetting)>,
}

impl FormatPlan {
    pub fn new(options: &FormatOptions, fields: &FieldVisibility<'_>) -> FormatPlan {
        let displayed = fields
            .displayed
            .filter(|list| !list.iter().any(|name| name == WILDCARD))
            .map(|list| {
                list.iter()
                    .filter(|name| (fields.is_known)(name))
                    .cloned()
                    .collect::<Vec<_>>()
            });
        let selectable = |name: &str| {
            (fields.is_known)(name)
                && displayed
                    .as_ref()
                    .is_none_or(|list| list.iter().any(|shown| shown == name))
        };
        let any_displayed = displayed.as_ref().is_none_or(|list| !list.is_empty());
        let mut plan = FormatPlan::default();
        for name in &options.attributes_to_highlight {
            if name == WILDCARD {
                plan.highlight_all = any_displayed;
            } else if selectable(name) && !plan.highlight.contains(name) {
                plan.highlight.push(name.clone());
            }
        }
        for (order, entry) in options.attributes_to_crop.iter().enumerate() {
            let (name, length) = match entry.rsplit_once(CROP_LENGTH_SEPARATOR) {
                Some((name, length)) => (name, length.parse().unwrap_or(options.crop_length)),
                None => (entry.as_str(), options.crop_length),
            };
            let setting = CropSetting { length, order };
            if name == WILDCARD {
                plan.crop_all = any_displayed.then_some(setting);
            } else if selectable(name) {
                match plan.crop.iter_mut().find(|(known, _)| known == name) {
                    Some((_, known)) => *known = setting,
                    None => plan.crop.push((name.to_owned(), setting)),
                }
            }
        }
        plan.displayed = displayed;
        plan
    }

    /// Whether `_formatted` exists.
    pub fn formats(&self) -> bool {
        self.highlight_all
            || self.crop_all.is_some()
            || !self.highlight.is_empty()
            || !self.crop.is_empty()
    }

    /// Whether the value at `path` (an object, array or leaf) is displayed or holds displayed
    /// fields.
    pub fn is_displayed(&self, path: &str) -> bool {
        self.displayed
            .as_ref()
            .is_none_or(|list| list.iter().any(|name| related(name, path)))
    }

    /// Whether the wildcard covers the field `name`.
    fn wildcard_covers(&self, name: &str) -> bool {
        self.displayed
            .as_ref()
            .is_none_or(|list| list.iter().any(|shown| shown == name))
    }

    /// The crop of the field `name`, given its own setting: the later of it and the
    /// wildcard's.
    fn effective_crop(&self, name: &str, own: Option<CropSetting>) -> Option<CropSetting> {
        let wildcard = self.crop_all.filter(|_| self.wildcard_covers(name));
        match (own, wildcard) {
            (Some(own), Some(wildcard)) => Some(if own.order > wildcard.order {
                own
            } else {
                wildcard
            }),
            (own, wildcard) => own.or(wildcard),
        }
    }

    fn own_crop(&self, name: &str) -> Option<CropSetting> {
        self.crop
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, setting)| *setting)
    }

    /// How to format the displayed leaf at `path`.
    pub fn leaf_format(&self, path: &str) -> TextFormat {
        let highlight = self.highlight_all || self.highlight.iter().any(|name| related(name, path));
        let shallow =
            ancestors_or_self(path).find_map(|name| self.effective_crop(name, self.own_crop(name)));
        let crop = shallow.or_else(|| {
            self.crop
                .iter()
                .filter(|(name, _)| name != path && is_under(name, path))
                .find_map(|(name, setting)| self.effective_crop(name, Some(*setting)))
        });
        TextFormat {
            highlight,
            crop: crop.map(|setting| setting.length),
        }
    }

    /// The field names `_formatted` selects beyond the retrieved ones (`top_level`: the
    /// document's own keys, for the wildcard when every field is displayed).
    pub fn selected_names<'a>(&'a self, top_level: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
        let mut names: Vec<&str> = self
            .highlight
            .iter()
            .chain(self.crop.iter().map(|(name, _)| name))
            .map(String::as_str)
            .collect();
        if self.highlight_all || self.crop_all.is_some() {
            match &self.displayed {
                Some(list) => names.extend(list.iter().map(String::as_str)),
                None => names.extend(top_level),
            }
        }
        names
    }
}
