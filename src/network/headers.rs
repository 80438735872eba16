//! The headers instances of a network send one another with a write (Meilisearch
//! Enterprise's names and rules): who the leader is and which of its tasks a forwarded write
//! copies (origin), and for the imports of a network change, who sends and how much
//! (import, import metadata).
//!
//! Every header is sent twice, as `X-Meili-Proxy-…` and under the legacy name without `X-`;
//! a reader takes the `X-` form first. Values are percent-encoded.
//!
//! Invariants: the three groups are read as all-or-nothing (an origin names both a remote
//! and a task; an import names a remote and a document count; import metadata names an
//! index count and a total) and a request carries none, the origin alone, or all three —
//! anything else is `inconsistent_document_change_headers` with Meilisearch's message; a
//! missing network version reads as the nil UUID.

use std::borrow::Cow;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use uuid::Uuid;

use super::task_network::{ImportData, Origin, TaskUid};
use crate::errors::{Code, ResponseError};

pub const ORIGIN_REMOTE_HEADER: &str = "X-Meili-Proxy-Origin-Remote";
pub const ORIGIN_TASK_UID_HEADER: &str = "X-Meili-Proxy-Origin-TaskUid";
pub const ORIGIN_NETWORK_VERSION_HEADER: &str = "X-Meili-Proxy-Origin-Network-Version";
pub const IMPORT_REMOTE_HEADER: &str = "X-Meili-Proxy-Import-Remote";
pub const IMPORT_INDEX_HEADER: &str = "X-Meili-Proxy-Import-Index";
pub const IMPORT_DOCS_HEADER: &str = "X-Meili-Proxy-Import-Docs";
pub const IMPORT_INDEX_COUNT_HEADER: &str = "X-Meili-Proxy-Import-Index-Count";
pub const IMPORT_TASK_KEY_HEADER: &str = "X-Meili-Proxy-Import-Task-Key";
pub const IMPORT_TOTAL_INDEX_DOCS_HEADER: &str = "X-Meili-Proxy-Import-Total-Index-Docs";

/// The prefix the current names carry and the legacy names lack.
const CURRENT_PREFIX: &str = "X-";

/// What percent-encoding leaves as is (the unreserved characters of RFC 3986).
const KEPT_AS_IS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The counts of an import that are not stored with its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportMetadata {
    /// How many indexes the sender sends.
    pub index_count: u64,
    /// A key unique to this payload among the sender's payloads for the index.
    pub task_key: Option<u64>,
    /// How many documents the sender sends for this index.
    pub total_index_documents: u64,
}

/// The network headers of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkHeaders {
    /// A user's request.
    None,
    /// A write the leader forwarded.
    Origin(Origin),
    /// A document import of a network change.
    Import {
        origin: Origin,
        import: ImportData,
        metadata: ImportMetadata,
    },
}

impl NetworkHeaders {
    /// Reads the headers through `header` (a case-insensitive lookup of one name).
    pub fn read<'request>(
        header: impl Fn(&str) -> Option<&'request [u8]>,
    ) -> Result<NetworkHeaders, ResponseError> {
        let reader = Reader { header: &header };
        let origin = reader.origin()?;
        let import = reader.import()?;
        let metadata = reader.import_metadata()?;
        match (origin, import, metadata) {
            (None, None, None) => Ok(NetworkHeaders::None),
            (Some(origin), None, None) => Ok(NetworkHeaders::Origin(origin)),
            (Some(origin), Some(import), Some(metadata)) => Ok(NetworkHeaders::Import {
                origin,
                import,
                metadata,
            }),
            (origin, import, metadata) => Err(inconsistent(&[
                ("origin headers", origin.is_some()),
                ("import headers", import.is_some()),
                ("import metadata", metadata.is_some()),
            ])),
        }
    }
}

/// The origin headers of a forwarded write, each under both names, percent-encoded.
pub fn origin_headers(origin: &Origin) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    push_twice(&mut headers, ORIGIN_REMOTE_HEADER, &origin.remote_name);
    push_twice(
        &mut headers,
        ORIGIN_TASK_UID_HEADER,
        &origin.task_uid.to_string(),
    );
    push_twice(
        &mut headers,
        ORIGIN_NETWORK_VERSION_HEADER,
        &origin.network_version.to_string(),
    );
    headers
}

/// The headers of one import payload of a network change: the change's origin, the sender
/// and its counts, each under both names, percent-encoded.
pub fn import_headers(
    origin: &Origin,
    import: &ImportData,
    metadata: &ImportMetadata,
) -> Vec<(String, String)> {
    let mut headers = origin_headers(origin);
    push_twice(&mut headers, IMPORT_REMOTE_HEADER, &import.remote_name);
    if let Some(index) = &import.index_name {
        push_twice(&mut headers, IMPORT_INDEX_HEADER, index);
    }
    push_twice(
        &mut headers,
        IMPORT_DOCS_HEADER,
        &import.document_count.to_string(),
    );
    push_twice(
        &mut headers,
        IMPORT_INDEX_COUNT_HEADER,
        &metadata.index_count.to_string(),
    );
    if let Some(key) = metadata.task_key {
        push_twice(&mut headers, IMPORT_TASK_KEY_HEADER, &key.to_string());
    }
    push_twice(
        &mut headers,
        IMPORT_TOTAL_INDEX_DOCS_HEADER,
        &metadata.total_index_documents.to_string(),
    );
    headers
}

/// Adds `name: value` and its legacy twin.
fn push_twice(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    let encoded = utf8_percent_encode(value, KEPT_AS_IS).to_string();
    headers.push((name.to_owned(), encoded.clone()));
    headers.push((legacy_name(name).to_owned(), encoded));
}

/// `name` without its `X-` prefix.
fn legacy_name(name: &str) -> &str {
    name.strip_prefix(CURRENT_PREFIX).unwrap_or(name)
}

/// Reads and decodes single headers.
struct Reader<'lookup, Lookup> {
    header: &'lookup Lookup,
}

impl<'request, Lookup: Fn(&str) -> Option<&'request [u8]>> Reader<'_, Lookup> {
    /// The decoded value of `name` (or of its legacy twin).
    fn text(&self, name: &'static str) -> Result<Option<Cow<'request, str>>, ResponseError> {
        let Some(raw) = (self.header)(name).or_else(|| (self.header)(legacy_name(name))) else {
            return Ok(None);
        };
        let raw = std::str::from_utf8(raw).map_err(|error| invalid_value(name, error))?;
        let decoded = percent_decode_str(raw)
            .decode_utf8()
            .map_err(|error| invalid_value(name, error))?;
        Ok(Some(decoded))
    }

    /// The value of `name` parsed as `T`.
    fn parsed<T: std::str::FromStr>(&self, name: &'static str) -> Result<Option<T>, ResponseError>
    where
        T::Err: std::fmt::Display,
    {
        self.text(name)?
            .map(|text| {
                text.parse::<T>()
                    .map_err(|error| invalid_value(name, error))
            })
            .transpose()
    }

    fn origin(&self) -> Result<Option<Origin>, ResponseError> {
        let remote = self.text(ORIGIN_REMOTE_HEADER)?;
        let task_uid = self.parsed::<TaskUid>(ORIGIN_TASK_UID_HEADER)?;
        let version = self.parsed::<Uuid>(ORIGIN_NETWORK_VERSION_HEADER)?;
        match (remote, task_uid) {
            (None, None) => Ok(None),
            (Some(remote), Some(task_uid)) => Ok(Some(Origin {
                remote_name: remote.into_owned(),
                task_uid,
                network_version: version.unwrap_or_else(Uuid::nil),
            })),
            (remote, _) => Err(inconsistent_origin(remote.is_none())),
        }
    }

    fn import(&self) -> Result<Option<ImportData>, ResponseError> {
        let remote = self.text(IMPORT_REMOTE_HEADER)?;
        let index = self.text(IMPORT_INDEX_HEADER)?;
        let documents = self.parsed::<u64>(IMPORT_DOCS_HEADER)?;
        match (remote, index, documents) {
            (None, None, None) => Ok(None),
            (Some(remote), index, Some(document_count)) => Ok(Some(ImportData {
                remote_name: remote.into_owned(),
                index_name: index.map(Cow::into_owned),
                document_count,
            })),
            (remote, index, documents) => Err(inconsistent_group(
                "Import",
                [
                    (IMPORT_REMOTE_HEADER, remote.is_some()),
                    (IMPORT_INDEX_HEADER, index.is_some()),
                    (IMPORT_DOCS_HEADER, documents.is_some()),
                ],
            )),
        }
    }

    fn import_metadata(&self) -> Result<Option<ImportMetadata>, ResponseError> {
        let index_count = self.parsed::<u64>(IMPORT_INDEX_COUNT_HEADER)?;
        let task_key = self.parsed::<u64>(IMPORT_TASK_KEY_HEADER)?;
        let total = self.parsed::<u64>(IMPORT_TOTAL_INDEX_DOCS_HEADER)?;
        match (index_count, task_key, total) {
            (None, None, None) => Ok(None),
            (Some(index_count), task_key, Some(total_index_documents)) => {
                Ok(Some(ImportMetadata {
                    index_count,
                    task_key,
                    total_index_documents,
                }))
            }
            (index_count, task_key, total) => Err(inconsistent_group(
                "Import-Metadata",
                [
                    (IMPORT_INDEX_COUNT_HEADER, index_count.is_some()),
                    (IMPORT_TASK_KEY_HEADER, task_key.is_some()),
                    (IMPORT_TOTAL_INDEX_DOCS_HEADER, total.is_some()),
                ],
            )),
        }
    }
}

fn invalid_value(name: &str, error: impl std::fmt::Display) -> ResponseError {
    ResponseError::new(
        Code::InvalidHeaderValue,
        format!("Invalid value for header `{name}`: {error}"),
    )
}

fn inconsistent_origin(is_remote_missing: bool) -> ResponseError {
    let (provided, missing) = if is_remote_missing {
        (ORIGIN_TASK_UID_HEADER, ORIGIN_REMOTE_HEADER)
    } else {
        (ORIGIN_REMOTE_HEADER, ORIGIN_TASK_UID_HEADER)
    };
    ResponseError::new(
        Code::InconsistentDocumentChangeHeaders,
        format!(
            "Inconsistent `Origin` headers: {provided} was provided but {missing} is missing.\n  - Hint: Either both headers should be provided, or none of them"
        ),
    )
}

fn inconsistent_group(group: &str, headers: [(&str, bool); 3]) -> ResponseError {
    let states: Vec<String> = headers
        .iter()
        .map(|(name, present)| format!("{name}: {}", provided_or_missing(*present)))
        .collect();
    ResponseError::new(
        Code::InconsistentDocumentChangeHeaders,
        format!(
            "Inconsistent `{group}` headers: {}.\n - Hint: either all three headers should be provided, or none of them",
            states.join(", ")
        ),
    )
}

fn provided_or_missing(present: bool) -> &'static str {
    if present { "provided" } else { "missing" }
}

fn inconsistent(groups: &[(&str, bool)]) -> ResponseError {
    let states: Vec<String> = groups
        .iter()
        .map(|(name, present)| format!("{name}: {}", if *present { "present" } else { "missing" }))
        .collect();
    ResponseError::new(
        Code::InconsistentDocumentChangeHeaders,
        format!("Inconsistent task network headers: {}", states.join(", ")),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<NetworkHeaders, ResponseError> {
        NetworkHeaders::read(|name| {
            pairs
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.as_bytes())
        })
    }

    #[test]
    fn origin_headers_read_back_under_either_name() {
        let origin = Origin {
            remote_name: "ms 0/é".into(),
            task_uid: 12,
            network_version: Uuid::now_v7(),
        };
        let written = origin_headers(&origin);
        assert_eq!(written.len(), 6);
        let pairs: Vec<(&str, &str)> = written
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            read(&pairs).expect("the headers read"),
            NetworkHeaders::Origin(origin.clone())
        );
        let legacy: Vec<(&str, &str)> = pairs
            .iter()
            .filter(|(name, _)| !name.starts_with("X-"))
            .copied()
            .collect();
        assert_eq!(
            read(&legacy).expect("the legacy headers read"),
            NetworkHeaders::Origin(origin)
        );
    }

    #[test]
    fn import_headers_read_back_as_an_import() {
        let origin = Origin {
            remote_name: "ms0".into(),
            task_uid: 3,
            network_version: Uuid::now_v7(),
        };
        let import = ImportData {
            remote_name: "ms1".into(),
            index_name: Some("books".into()),
            document_count: 12,
        };
        let metadata = ImportMetadata {
            index_count: 2,
            task_key: Some(7),
            total_index_documents: 40,
        };
        let written = import_headers(&origin, &import, &metadata);
        let pairs: Vec<(&str, &str)> = written
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            read(&pairs).expect("the headers read"),
            NetworkHeaders::Import {
                origin,
                import,
                metadata
            }
        );
    }

    #[test]
    fn half_an_origin_or_a_lone_import_is_inconsistent() {
        let error = read(&[(ORIGIN_REMOTE_HEADER, "ms0")]).unwrap_err();
        assert_eq!(error.code, Code::InconsistentDocumentChangeHeaders);
        assert!(error.message.contains(
            "X-Meili-Proxy-Origin-Remote was provided but X-Meili-Proxy-Origin-TaskUid is missing"
        ));
        let error = read(&[(IMPORT_REMOTE_HEADER, "ms1"), (IMPORT_DOCS_HEADER, "3")]).unwrap_err();
        assert_eq!(
            error.message,
            "Inconsistent task network headers: origin headers: missing, import headers: present, import metadata: missing"
        );
        let error =
            read(&[(ORIGIN_TASK_UID_HEADER, "x"), (ORIGIN_REMOTE_HEADER, "a")]).unwrap_err();
        assert_eq!(error.code, Code::InvalidHeaderValue);
    }

    #[test]
    fn no_header_is_a_user_request_and_a_missing_version_is_nil() {
        assert_eq!(
            read(&[]).expect("no headers read as none"),
            NetworkHeaders::None
        );
        let read = read(&[
            ("Meili-Proxy-Origin-Remote", "l"),
            ("Meili-Proxy-Origin-TaskUid", "4"),
        ])
        .expect("the headers read");
        let NetworkHeaders::Origin(origin) = read else {
            panic!("an origin");
        };
        assert_eq!(origin.network_version, Uuid::nil());
    }
}
