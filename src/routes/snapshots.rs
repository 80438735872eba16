//! `POST /snapshots`: registers a `snapshotCreation` task, which writes a snapshot of the
//! whole instance into `--snapshot-dir` (`crate::tasks::snapshot`). Instance-wide: the route
//! table requires `snapshots.create`, which a key restricted to some indexes never holds.
//! The body, if any, is not read, as Meilisearch does not read it.

use super::Services;
use super::indexes::register;
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::tasks::model::KindWithContent;

/// The status Meilisearch answers a registered snapshot with.
const SNAPSHOT_REGISTERED_STATUS: u16 = 202;

/// `POST /snapshots`.
pub async fn create(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    register(
        services,
        request,
        KindWithContent::SnapshotCreation,
        None,
        SNAPSHOT_REGISTERED_STATUS,
    )
    .await
}
