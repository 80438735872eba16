//! A document's `_geo` field checked as Meilisearch's engine checks it when `_geo` is
//! filterable or sortable: absent or `null` holds no point; otherwise an object with exactly
//! `lat` and `lng`, each a finite number or a string that parses as one (not trimmed). A
//! document that breaks the rule fails its batch with `invalid_document_geo_field` and
//! Meilisearch's message naming the document's id.
//!
//! Invariant: the messages are Meilisearch 1.41's (`milli::error::GeoError`); the values in
//! them are the document's own, written as compact JSON.

use serde_json::{Map, Value};

use crate::error::{ShardError, ShardResult};

/// The reserved field holding a document's point.
const GEO_FIELD: &str = "_geo";

/// Checks the `_geo` field of the document `external_id`.
pub fn check_geo_field(external_id: &str, document: &Map<String, Value>) -> ShardResult<()> {
    let id = Value::from(external_id);
    let mut geo = match document.get(GEO_FIELD) {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(geo)) => geo.clone(),
        Some(value) => {
            return Err(invalid(format!(
                "The `_geo` field in the document with the id: `{id}` is not an object. Was expecting an object with the `_geo.lat` and `_geo.lng` fields but instead got `{value}`."
            )));
        }
    };
    let (lat, lng) = match (geo.remove("lat"), geo.remove("lng")) {
        (Some(lat), Some(lng)) if geo.is_empty() => (lat, lng),
        (Some(_), Some(_)) => {
            let extra = Value::Object(geo);
            return Err(invalid(format!(
                "The `_geo` field in the document with the id: `{id}` contains the following unexpected fields: `{extra}`."
            )));
        }
        (Some(_), None) => {
            return Err(invalid(format!(
                "Could not find longitude in the document with the id: `{id}`. Was expecting a `_geo.lng` field."
            )));
        }
        (None, Some(_)) => {
            return Err(invalid(format!(
                "Could not find latitude in the document with the id: `{id}`. Was expecting a `_geo.lat` field."
            )));
        }
        (None, None) => {
            return Err(invalid(format!(
                "Could not find latitude nor longitude in the document with the id: `{id}`. Was expecting `_geo.lat` and `_geo.lng` fields."
            )));
        }
    };
    match (finite(&lat), finite(&lng)) {
        (true, true) => Ok(()),
        (true, false) => Err(invalid(format!(
            "Could not parse longitude in the document with the id: `{id}`. Was expecting a finite number but instead got `{lng}`."
        ))),
        (false, true) => Err(invalid(format!(
            "Could not parse latitude in the document with the id: `{id}`. Was expecting a finite number but instead got `{lat}`."
        ))),
        (false, false) => Err(invalid(format!(
            "Could not parse latitude nor longitude in the document with the id: `{id}`. Was expecting finite numbers but instead got `{lat}` and `{lng}`."
        ))),
    }
}

/// Whether `value` is a finite number, or a string that parses as one.
fn finite(value: &Value) -> bool {
    let number = match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.parse::<f64>().ok(),
        _ => None,
    };
    number.is_some_and(f64::is_finite)
}

fn invalid(message: String) -> ShardError {
    ShardError::InvalidDocumentGeoField(message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(document: Value) -> Option<String> {
        let Value::Object(document) = document else {
            panic!("test documents are objects");
        };
        check_geo_field("11", &document)
            .err()
            .map(|error| error.to_string())
    }

    #[test]
    fn points_and_their_absence_pass() {
        assert_eq!(message(json!({"id": 11})), None);
        assert_eq!(message(json!({"_geo": null})), None);
        assert_eq!(message(json!({"_geo": {"lat": 1, "lng": "2.5"}})), None);
        assert_eq!(message(json!({"_geo": {"lat": 100, "lng": -500}})), None);
    }

    #[test]
    fn each_fault_has_meilisearch_s_message() {
        assert_eq!(
            message(json!({"_geo": "foobar"})).unwrap(),
            "The `_geo` field in the document with the id: `\"11\"` is not an object. Was expecting an object with the `_geo.lat` and `_geo.lng` fields but instead got `\"foobar\"`."
        );
        assert_eq!(
            message(json!({"_geo": {"lat": 1, "lng": 2, "doggo": "are the best"}})).unwrap(),
            "The `_geo` field in the document with the id: `\"11\"` contains the following unexpected fields: `{\"doggo\":\"are the best\"}`."
        );
        assert_eq!(
            message(json!({"_geo": {}})).unwrap(),
            "Could not find latitude nor longitude in the document with the id: `\"11\"`. Was expecting `_geo.lat` and `_geo.lng` fields."
        );
        assert_eq!(
            message(json!({"_geo": {"lat": false, "lng": true}})).unwrap(),
            "Could not parse latitude nor longitude in the document with the id: `\"11\"`. Was expecting finite numbers but instead got `false` and `true`."
        );
        assert_eq!(
            message(json!({"_geo": {"lat": null, "lng": 1}})).unwrap(),
            "Could not parse latitude in the document with the id: `\"11\"`. Was expecting a finite number but instead got `null`."
        );
        assert_eq!(
            message(json!({"_geo": {"lat": 1, "lng": " 2"}})).unwrap(),
            "Could not parse longitude in the document with the id: `\"11\"`. Was expecting a finite number but instead got `\" 2\"`."
        );
    }
}
