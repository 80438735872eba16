//! Preparing one index on an export's target before its documents are sent (reference §4):
//! `GET /indexes/{uid}` tells whether it exists; a missing index is created with the source's
//! primary key (`POST /indexes`) and gets every setting (`PATCH /indexes/{uid}/settings`);
//! an existing one is changed only when `overrideSettings` asks (`PATCH /indexes/{uid}` with
//! the primary key, then the settings).
//!
//! Invariants: only `index_not_found` counts as "missing" (any other failure stops the
//! export); the calls are made in this order, each once accepted (the target's tasks are
//! not awaited, as Meilisearch does not await them).

use serde_json::{Value, json};

use crate::errors::Code;
use crate::host::export::remote::{ExportTarget, RemoteError};
use crate::outgoing::Method;

/// What the target gets for one index.
pub struct IndexOnTarget<'index> {
    pub uid: &'index str,
    pub primary_key: Option<&'index str>,
    /// The full settings object, secrets revealed.
    pub settings: Value,
    pub override_settings: bool,
}

/// Makes the index ready on `target` for its documents.
pub async fn prepare_index(
    target: &ExportTarget,
    index: IndexOnTarget<'_>,
) -> Result<(), RemoteError> {
    let index_path = format!("/indexes/{}", index.uid);
    let exists = match target.send(target.request(Method::Get, &index_path)?).await {
        Ok(_) => true,
        Err(error) if error.remote_code() == Some(Code::IndexNotFound.name()) => false,
        Err(error) => return Err(error),
    };
    if !exists {
        let creation = json!({ "uid": index.uid, "primaryKey": index.primary_key });
        send_json(target, Method::Post, "/indexes", &creation).await?;
    } else if index.override_settings {
        let update = json!({ "primaryKey": index.primary_key });
        send_json(target, Method::Patch, &index_path, &update).await?;
    }
    if !exists || index.override_settings {
        let settings_path = format!("{index_path}/settings");
        send_json(target, Method::Patch, &settings_path, &index.settings).await?;
    }
    Ok(())
}

async fn send_json(
    target: &ExportTarget,
    method: Method,
    path: &str,
    body: &Value,
) -> Result<(), RemoteError> {
    let request = target
        .request(method, path)?
        .json(body.to_string().into_bytes());
    target.send(request).await.map(|_| ())
}
