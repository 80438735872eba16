//! The three states of one setting in an update: given a value, reset with `null`, or
//! absent.
//!
//! Invariants: JSON `null` always decodes to [`Setting::Reset`]; a missing key decodes to
//! [`Setting::NotSet`] (through `#[deserr(default)]`); `NotSet` is never serialized (fields
//! use `skip_serializing_if = "Setting::is_not_set"`), `Reset` serializes as `null`.

use deserr::{DeserializeError, Deserr, ValuePointerRef};
use serde::{Deserialize, Serialize, Serializer};

/// One setting of an update request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "Option<T>")]
pub enum Setting<T> {
    Set(T),
    Reset,
    #[default]
    NotSet,
}

impl<T> From<Option<T>> for Setting<T> {
    fn from(value: Option<T>) -> Self {
        match value {
            Some(value) => Setting::Set(value),
            None => Setting::Reset,
        }
    }
}

impl<T> Setting<T> {
    /// Whether the key was absent from the request.
    pub const fn is_not_set(&self) -> bool {
        matches!(self, Setting::NotSet)
    }

    /// The given value, if any.
    pub fn set(self) -> Option<T> {
        match self {
            Setting::Set(value) => Some(value),
            Setting::Reset | Setting::NotSet => None,
        }
    }

    /// A borrowed view of the setting.
    pub const fn as_ref(&self) -> Setting<&T> {
        match self {
            Setting::Set(value) => Setting::Set(value),
            Setting::Reset => Setting::Reset,
            Setting::NotSet => Setting::NotSet,
        }
    }

    /// Applies the update to `current`: a value replaces it, a reset puts `default`, absence
    /// keeps it.
    pub fn apply_to(self, current: &mut T, default: impl FnOnce() -> T) {
        match self {
            Setting::Set(value) => *current = value,
            Setting::Reset => *current = default(),
            Setting::NotSet => {}
        }
    }
}

impl<T: Serialize> Serialize for Setting<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Setting::Set(value) => value.serialize(serializer),
            Setting::Reset | Setting::NotSet => serializer.serialize_none(),
        }
    }
}

impl<T, E> Deserr<E> for Setting<T>
where
    T: Deserr<E>,
    E: DeserializeError,
{
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        match value {
            deserr::Value::Null => Ok(Setting::Reset),
            other => T::deserialize_from_value(other, location).map(Setting::Set),
        }
    }
}
