//! A Liquid object that keeps its fields' order (Liquid's own object is a hash map): the
//! template's globals and its `doc`, so `{{doc}}` and the `available indexes` of a
//! missing-field error list the fields as the document has them.
//!
//! Invariant: each name is held once, with a value converted when the object is built;
//! nested objects below `doc` are Liquid's own.

use std::fmt;

use liquid::model::{
    DisplayCow, KString, KStringCow, ObjectRender, ObjectSource, State, Value as LiquidValue,
};
use liquid::{ObjectView, ValueView};

/// Named values, in order.
#[derive(Debug, Default)]
pub struct OrderedObject {
    fields: Vec<(KString, Box<dyn ValueView>)>,
}

impl OrderedObject {
    /// Adds `value` as `name`, after the fields already there.
    pub fn push(&mut self, name: KString, value: Box<dyn ValueView>) {
        self.fields.push((name, value));
    }
}

impl ObjectView for OrderedObject {
    fn as_value(&self) -> &dyn ValueView {
        self
    }

    fn size(&self) -> i64 {
        i64::try_from(self.fields.len()).unwrap_or(i64::MAX)
    }

    fn keys<'view>(&'view self) -> Box<dyn Iterator<Item = KStringCow<'view>> + 'view> {
        Box::new(
            self.fields
                .iter()
                .map(|(name, _)| KStringCow::from(name.as_str())),
        )
    }

    fn values<'view>(&'view self) -> Box<dyn Iterator<Item = &'view dyn ValueView> + 'view> {
        Box::new(self.fields.iter().map(|(_, value)| value.as_ref()))
    }

    fn iter<'view>(
        &'view self,
    ) -> Box<dyn Iterator<Item = (KStringCow<'view>, &'view dyn ValueView)> + 'view> {
        Box::new(
            self.fields
                .iter()
                .map(|(name, value)| (KStringCow::from(name.as_str()), value.as_ref())),
        )
    }

    fn contains_key(&self, index: &str) -> bool {
        self.fields.iter().any(|(name, _)| name.as_str() == index)
    }

    fn get<'view>(&'view self, index: &str) -> Option<&'view dyn ValueView> {
        self.fields
            .iter()
            .find(|(name, _)| name.as_str() == index)
            .map(|(_, value)| value.as_ref())
    }
}

impl ValueView for OrderedObject {
    fn as_debug(&self) -> &dyn fmt::Debug {
        self
    }

    fn render(&self) -> DisplayCow<'_> {
        DisplayCow::Owned(Box::new(ObjectRender::new(self)))
    }

    fn source(&self) -> DisplayCow<'_> {
        DisplayCow::Owned(Box::new(ObjectSource::new(self)))
    }

    fn type_name(&self) -> &'static str {
        "object"
    }

    fn query_state(&self, state: State) -> bool {
        match state {
            State::Truthy => true,
            State::DefaultValue | State::Empty | State::Blank => self.fields.is_empty(),
        }
    }

    fn to_kstr(&self) -> KStringCow<'_> {
        KStringCow::from_string(ObjectRender::new(self).to_string())
    }

    fn to_value(&self) -> LiquidValue {
        LiquidValue::Object(
            self.fields
                .iter()
                .map(|(name, value)| (name.clone(), value.to_value()))
                .collect(),
        )
    }

    fn as_object(&self) -> Option<&dyn ObjectView> {
        Some(self)
    }
}
