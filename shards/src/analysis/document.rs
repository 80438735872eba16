//! The words of one document: for every searchable leaf field, its words and their positions,
//! walked as Meilisearch walks documents for search (nested keys joined with `.`, array
//! elements on their array's path), each field analysed in the languages `localizedAttributes`
//! gives it.
//!
//! Invariants: a field's first value starts at position 0 and each further value of the same
//! field starts [`HARD_SEPARATOR_DISTANCE`] after the last word of the previous one; strings,
//! numbers and booleans are analysed, `null` is not; positions stay below
//! [`FIELD_POSITIONS_MAX`]; every word's occurrences are sorted and deduplicated.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use charabia::Tokenizer;

use super::analyzer::{Analyzer, FIELD_POSITIONS_MAX, HARD_SEPARATOR_DISTANCE};
use super::settings::TextSettings;

/// One place a word occurs: a field id and a position in that field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Occurrence {
    pub field: u16,
    pub position: u16,
}

/// Everything a document contributes to the inverted index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentWords {
    /// Word → its sorted occurrences.
    pub words: BTreeMap<String, Vec<Occurrence>>,
    /// Field id → number of words (stop words excluded) in that field.
    pub field_lengths: BTreeMap<u16, u16>,
}

struct Walker<'a, 't, F, V> {
    tokenizer: &'a Tokenizer<'t>,
    analyzer: &'a Analyzer,
    settings: &'a TextSettings,
    field_id: F,
    /// Field id → the position the next value would continue from.
    next_start: BTreeMap<u16, u32>,
    /// Field id → number of words (stop words excluded) in that field.
    field_lengths: BTreeMap<u16, u16>,
    visit: &'a mut V,
}

/// Analyses `document`; `field_id` gives the id of a searchable leaf path (`None` when it has
/// none, which the caller treats as corruption: every path is registered before indexing).
pub fn document_words<F>(
    analyzer: &Analyzer,
    settings: &TextSettings,
    document: &Map<String, Value>,
    field_id: F,
) -> Result<DocumentWords, String>
where
    F: FnMut(&str) -> Option<u16>,
{
    let mut words: BTreeMap<String, Vec<Occurrence>> = BTreeMap::new();
    let field_lengths = each_document_word(
        analyzer,
        settings,
        document,
        field_id,
        &mut |word, occurrence| match words.get_mut(word) {
            Some(occurrences) => occurrences.push(occurrence),
            None => {
                words.insert(word.to_owned(), vec![occurrence]);
            }
        },
    )?;
    for occurrences in words.values_mut() {
        occurrences.sort_unstable();
        occurrences.dedup();
    }
    Ok(DocumentWords {
        words,
        field_lengths,
    })
}

/// Walks `document` as [`document_words`] does, calling `visit` with every occurrence of a
/// word (borrowed: the caller copies only the words it keeps), in walk order, unsorted and
/// with repeats; answers the field lengths.
pub fn each_document_word<F, V>(
    analyzer: &Analyzer,
    settings: &TextSettings,
    document: &Map<String, Value>,
    field_id: F,
    visit: &mut V,
) -> Result<BTreeMap<u16, u16>, String>
where
    F: FnMut(&str) -> Option<u16>,
    V: FnMut(&str, Occurrence),
{
    analyzer.with_tokenizer(|tokenizer| {
        let mut walker = Walker {
            tokenizer,
            analyzer,
            settings,
            field_id,
            next_start: BTreeMap::new(),
            field_lengths: BTreeMap::new(),
            visit,
        };
        for (key, value) in document {
            if settings.may_search_under(key) {
                walker.value(key, value)?;
            }
        }
        Ok(walker.field_lengths)
    })
}

impl<F: FnMut(&str) -> Option<u16>, V: FnMut(&str, Occurrence)> Walker<'_, '_, F, V> {
    fn value(&mut self, path: &str, value: &Value) -> Result<(), String> {
        match value {
            Value::Object(object) => {
                for (key, inner) in object {
                    self.value(&format!("{path}.{key}"), inner)?;
                }
                Ok(())
            }
            Value::Array(elements) => {
                for element in elements {
                    self.value(path, element)?;
                }
                Ok(())
            }
            Value::String(text) => self.leaf(path, text),
            Value::Number(number) => self.leaf(path, &number.to_string()),
            Value::Bool(flag) => self.leaf(path, if *flag { "true" } else { "false" }),
            Value::Null => Ok(()),
        }
    }

    fn leaf(&mut self, path: &str, text: &str) -> Result<(), String> {
        if self.settings.field_weight(path).is_none() {
            return Ok(());
        }
        let field = (self.field_id)(path).ok_or_else(|| format!("field {path} has no id"))?;
        let start = match self.next_start.get(&field) {
            Some(last) => last + HARD_SEPARATOR_DISTANCE,
            None => 0,
        };
        self.next_start.insert(field, start);
        if start >= FIELD_POSITIONS_MAX {
            return Ok(());
        }
        let languages = self.analyzer.field_languages().of_field(path);
        let mut last_position = None;
        let mut words: u32 = 0;
        let visit = &mut *self.visit;
        self.analyzer.each_word_with(
            self.tokenizer,
            text,
            languages,
            start,
            &mut |word, position| {
                last_position = Some(position);
                words += 1;
                let position = u16::try_from(position).expect("positions stay below 2^16");
                visit(word, Occurrence { field, position });
            },
        );
        if let Some(position) = last_position {
            self.next_start.insert(field, position);
            let length = self.field_lengths.entry(field).or_default();
            *length = length.saturating_add(u16::try_from(words).unwrap_or(u16::MAX));
        }
        Ok(())
    }
}
