//! The documents of an update file as `GET /tasks/{task_uid}/documents` serves them: the
//! NDJSON Meilisearch keeps as its update file. Meilisearch stores an NDJSON payload as
//! sent and converts the other formats when it receives them; coresearch keeps every
//! payload as sent and converts when asked, to the same bytes:
//! - NDJSON: the file, unchanged;
//! - a JSON array: each object written compactly, one after the other with no separator,
//!   its top-level keys re-encoded and its values copied byte for byte as sent;
//! - a single JSON object, and CSV rows (typed by their headers): each document written
//!   compactly, one after the other with no separator.
//!
//! Invariant: the input was validated when its task was registered, so a decoding error
//! here means a damaged file (an internal error), never a user error.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use shards::documents::payload::{PayloadFormat, documents};

/// The NDJSON of the update file `payload`, stored in `format`.
pub fn update_file_as_ndjson(
    payload: Vec<u8>,
    format: PayloadFormat,
) -> Result<Vec<u8>, ConversionError> {
    match format {
        PayloadFormat::Ndjson => Ok(payload),
        PayloadFormat::Json if starts_with_array(&payload) => raw_objects(&payload),
        PayloadFormat::Json | PayloadFormat::Csv { .. } => parsed_documents(&payload, format),
    }
}

/// A stored update file that does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionError(pub String);

impl fmt::Display for ConversionError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "an update file does not decode: {}", self.0)
    }
}

fn starts_with_array(payload: &[u8]) -> bool {
    payload
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|byte| *byte == b'[')
}

/// Every document parsed, then written compactly.
fn parsed_documents(payload: &[u8], format: PayloadFormat) -> Result<Vec<u8>, ConversionError> {
    let mut output = Vec::with_capacity(payload.len());
    let all = documents(payload, format).map_err(|error| ConversionError(error.to_string()))?;
    for document in all {
        let document = document.map_err(|error| ConversionError(error.to_string()))?;
        serde_json::to_writer(&mut output, &document)
            .map_err(|error| ConversionError(error.to_string()))?;
    }
    Ok(output)
}

/// The objects of a JSON array, top-level keys re-encoded, values as sent.
fn raw_objects(payload: &[u8]) -> Result<Vec<u8>, ConversionError> {
    let objects: RawObjects<'_> =
        serde_json::from_slice(payload).map_err(|error| ConversionError(error.to_string()))?;
    Ok(objects.0)
}

/// The array's objects, already written out.
struct RawObjects<'payload>(Vec<u8>, std::marker::PhantomData<&'payload ()>);

impl<'de> Deserialize<'de> for RawObjects<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ArrayVisitor)
    }
}

struct ArrayVisitor;

impl<'de> Visitor<'de> for ArrayVisitor {
    type Value = RawObjects<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an array of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Self::Value, A::Error> {
        let mut output = Vec::new();
        while let Some(object) = sequence.next_element::<RawObject<'de>>()? {
            object
                .write(&mut output)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(RawObjects(output, std::marker::PhantomData))
    }
}

/// One object's top-level entries in order; a repeated key keeps its first place and its
/// last value.
struct RawObject<'payload> {
    entries: Vec<(String, &'payload RawValue)>,
}

impl RawObject<'_> {
    fn write(&self, output: &mut Vec<u8>) -> serde_json::Result<()> {
        output.push(b'{');
        for (position, (key, value)) in self.entries.iter().enumerate() {
            if position > 0 {
                output.push(b',');
            }
            serde_json::to_writer(&mut *output, key)?;
            output.push(b':');
            output.extend_from_slice(value.get().as_bytes());
        }
        output.push(b'}');
        Ok(())
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = RawObject<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries: Vec<(String, &'de RawValue)> = Vec::new();
        let mut positions: HashMap<String, usize> = HashMap::new();
        while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
            match positions.get(&key) {
                Some(position) => entries[*position].1 = value,
                None => {
                    positions.insert(key.clone(), entries.len());
                    entries.push((key, value));
                }
            }
        }
        Ok(RawObject { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(payload: &str, format: PayloadFormat) -> String {
        let bytes = update_file_as_ndjson(payload.as_bytes().to_vec(), format)
            .expect("a valid payload converts");
        String::from_utf8(bytes).expect("NDJSON is UTF-8")
    }

    #[test]
    fn ndjson_is_served_as_stored() {
        let payload = "{\"id\": 1, \"a\": [1, 2]}\n\n{\"id\":2}\n";
        assert_eq!(converted(payload, PayloadFormat::Ndjson), payload);
    }

    #[test]
    fn a_json_array_keeps_its_values_as_sent_and_drops_separators() {
        let payload = r#"[{"id": 1, "a": [1, 2,  3], "b": {"c" : 1}} , {"id":2, "\u0041": 1}]"#;
        assert_eq!(
            converted(payload, PayloadFormat::Json),
            r#"{"id":1,"a":[1, 2,  3],"b":{"c" : 1}}{"id":2,"A":1}"#
        );
    }

    #[test]
    fn a_single_json_object_is_rewritten_compactly() {
        assert_eq!(
            converted(r#"{"id": 7, "a": [1, 2]}"#, PayloadFormat::Json),
            r#"{"id":7,"a":[1,2]}"#
        );
    }

    #[test]
    fn csv_rows_become_typed_objects() {
        let payload = "id,name:string,n:number,b:boolean,x:other\n1,foo,3,true,q\n2,,,,\n";
        assert_eq!(
            converted(payload, PayloadFormat::Csv { delimiter: b',' }),
            r#"{"id":"1","name":"foo","n":3,"b":true,"x:other":"q"}{"id":"2","name":null,"n":null,"b":null,"x:other":null}"#
        );
    }
}
