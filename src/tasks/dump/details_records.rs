//! A task's `details` as Meilisearch's dumps write them, and back.
//!
//! Meilisearch serializes its `Details` enum as is: the variant name in PascalCase
//! (`DocumentAdditionOrUpdate`) around snake_case fields, which are the queue's own fields
//! (whose variants are camelCase). The differences are few and handled here: byte sizes
//! (an export's `payload_size`, a compaction's sizes) are human-readable strings such as
//! `"50 MiB"`, a compaction names its index, and an export's patterns write
//! `overrideSettings` in camelCase beside `matched_documents` in snake_case.
//!
//! Invariant: [`details_from_record`] of [`details_to_record`] gives the same details.

use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::tasks::model::{Details, KindWithContent};

/// The byte count `bytes` as Meilisearch's dumps write a byte size (`"50 MiB"`).
pub fn byte_size_value(bytes: u64) -> Value {
    Value::String(format!("{:#}", byte_unit::Byte::from_u64(bytes)))
}

/// The byte count of a byte size: a number, or a string such as `"50 MiB"`.
pub fn byte_size_from_value(value: Value) -> Result<u64, String> {
    match value {
        Value::Number(number) => number
            .as_u64()
            .ok_or_else(|| format!("`{number}` is not a byte size")),
        Value::String(text) => byte_unit::Byte::from_str(&text)
            .map(|size| size.as_u64())
            .map_err(|error| format!("`{text}` is not a byte size: {error}")),
        other => Err(format!("`{other}` is not a byte size")),
    }
}

/// `details` as a dump record; `kind` is the task's type (a compaction names its index).
pub fn details_to_record(details: &Details, kind: &KindWithContent) -> Value {
    let value = serde_json::to_value(details).expect("details always serialize");
    let Value::Object(object) = value else {
        return value;
    };
    let mut record = Map::new();
    for (variant, mut fields) in object {
        match (variant.as_str(), &mut fields) {
            ("export", Value::Object(fields)) => export_fields_to_record(fields),
            ("indexCompaction", Value::Object(fields)) => {
                sizes_to_record(fields);
                if let Some(index_uid) = kind.index_uid() {
                    fields.insert("index_uid".to_owned(), Value::from(index_uid));
                }
            }
            _ => {}
        }
        record.insert(pascal_case(&variant), fields);
    }
    Value::Object(record)
}

/// The details of a dump record.
pub fn details_from_record(record: Value) -> Result<Details, String> {
    let Value::Object(object) = record else {
        return Err(format!("details `{record}` are not an object"));
    };
    let mut details = Map::new();
    for (variant, mut fields) in object {
        match (variant.as_str(), &mut fields) {
            ("Export", Value::Object(fields)) => export_fields_from_record(fields)?,
            ("IndexCompaction", Value::Object(fields)) => {
                fields.remove("index_uid");
                sizes_from_record(fields)?;
            }
            _ => {}
        }
        details.insert(camel_case(&variant), fields);
    }
    serde_json::from_value(Value::Object(details))
        .map_err(|error| format!("unexpected details: {error}"))
}

const COMPACTION_SIZES: [&str; 2] = ["pre_compaction_size", "post_compaction_size"];

fn sizes_to_record(fields: &mut Map<String, Value>) {
    for name in COMPACTION_SIZES {
        if let Some(Value::Number(number)) = fields.get(name)
            && let Some(bytes) = number.as_u64()
        {
            fields.insert(name.to_owned(), byte_size_value(bytes));
        }
    }
}

fn sizes_from_record(fields: &mut Map<String, Value>) -> Result<(), String> {
    for name in COMPACTION_SIZES {
        if let Some(value) = fields.remove(name) {
            let bytes = match value {
                Value::Null => Value::Null,
                value => Value::from(byte_size_from_value(value)?),
            };
            fields.insert(name.to_owned(), bytes);
        }
    }
    Ok(())
}

fn export_fields_to_record(fields: &mut Map<String, Value>) {
    if let Some(Value::Number(number)) = fields.get("payload_size")
        && let Some(bytes) = number.as_u64()
    {
        fields.insert("payload_size".to_owned(), byte_size_value(bytes));
    }
    if let Some(Value::Object(indexes)) = fields.get_mut("indexes") {
        for settings in indexes.values_mut() {
            let matched = settings.get("matchedDocuments").cloned();
            *settings = json!({
                "filter": settings.get("filter").cloned().unwrap_or(Value::Null),
                "overrideSettings": settings.get("overrideSettings").cloned().unwrap_or(Value::Bool(false)),
            });
            if let Some(matched) = matched.filter(|matched| !matched.is_null()) {
                settings["matched_documents"] = matched;
            }
        }
    }
}

fn export_fields_from_record(fields: &mut Map<String, Value>) -> Result<(), String> {
    if let Some(size) = fields.remove("payload_size") {
        let bytes = match size {
            Value::Null => Value::Null,
            size => Value::from(byte_size_from_value(size)?),
        };
        fields.insert("payload_size".to_owned(), bytes);
    }
    if let Some(Value::Object(indexes)) = fields.get_mut("indexes") {
        for settings in indexes.values_mut() {
            *settings = json!({
                "filter": settings.get("filter").cloned().unwrap_or(Value::Null),
                "overrideSettings": settings.get("overrideSettings").cloned().unwrap_or(Value::Bool(false)),
                "matchedDocuments": settings.get("matched_documents").cloned().unwrap_or(Value::Null),
            });
        }
    }
    Ok(())
}

fn pascal_case(name: &str) -> String {
    let mut characters = name.chars();
    characters
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + characters.as_str())
        .unwrap_or_default()
}

fn camel_case(name: &str) -> String {
    let mut characters = name.chars();
    characters
        .next()
        .map(|first| first.to_ascii_lowercase().to_string() + characters.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::tasks::model::ExportIndexSettings;

    #[test]
    fn meilisearch_details_read_back() {
        for text in [
            r#"{"DocumentAdditionOrUpdate":{"received_documents":1,"indexed_documents":1}}"#,
            r#"{"SettingsUpdate":{"settings":{"embedders":{"default":{"source":"huggingFace"}}}}}"#,
            r#"{"Dump":{"dump_uid":null}}"#,
            r#"{"UpgradeDatabase":{"from":[1,12,2],"to":[1,13,0]}}"#,
        ] {
            let record: Value = serde_json::from_str(text).unwrap();
            let details = details_from_record(record.clone()).unwrap();
            let kind = KindWithContent::DumpCreation;
            assert_eq!(details_to_record(&details, &kind), record, "{text}");
        }
    }

    #[test]
    fn sizes_and_export_patterns_take_meilisearch_shapes() {
        let details = Details::Export {
            url: "http://a".into(),
            api_key: None,
            payload_size: Some(50 << 20),
            indexes: BTreeMap::from([(
                "movies".to_owned(),
                ExportIndexSettings {
                    filter: None,
                    override_settings: true,
                    matched_documents: Some(3),
                },
            )]),
        };
        let kind = KindWithContent::DumpCreation;
        let record = details_to_record(&details, &kind);
        assert_eq!(record["Export"]["payload_size"], "50 MiB");
        assert_eq!(
            record["Export"]["indexes"]["movies"],
            json!({"filter": null, "overrideSettings": true, "matched_documents": 3})
        );
        assert_eq!(details_from_record(record).unwrap(), details);
        let compaction = Details::IndexCompaction {
            pre_compaction_size: Some(2048),
            post_compaction_size: None,
        };
        let kind = KindWithContent::IndexCompaction {
            index_uid: "movies".into(),
        };
        let record = details_to_record(&compaction, &kind);
        assert_eq!(record["IndexCompaction"]["index_uid"], "movies");
        assert_eq!(record["IndexCompaction"]["pre_compaction_size"], "2 KiB");
        assert_eq!(details_from_record(record).unwrap(), compaction);
    }
}
