//! `POST /dumps`: registers a `dumpCreation` task, which writes a dump of the whole instance
//! into `--dump-dir` (`crate::tasks::dump`). Instance-wide: the route table requires
//! `dumps.create`, which a key restricted to some indexes never holds. The body, if any, is
//! not read, as Meilisearch does not read it.

use super::Services;
use super::indexes::register;
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::tasks::model::KindWithContent;

/// The status Meilisearch answers a registered dump with.
const DUMP_REGISTERED_STATUS: u16 = 202;

/// `POST /dumps`.
pub async fn create(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    register(
        services,
        request,
        KindWithContent::DumpCreation,
        None,
        DUMP_REGISTERED_STATUS,
    )
    .await
}
