//! What the hub says of one file before its bytes are fetched, asked as hf-hub asks it: a
//! `GET` of the file's URL for its first byte (`Range: bytes=0-0`), redirects not followed
//! but read.
//!
//! - `X-Repo-Commit` names the commit the revision resolved to;
//! - `X-Linked-Etag`, else `ETag` (quotes dropped) names the blob: for a file stored in
//!   LFS (the weights) it is the sha256 of its bytes;
//! - a relative redirect (a renamed repository) is asked again at its target; an absolute
//!   one (the CDN holding LFS files) keeps the hub's headers and gives the place the bytes
//!   are fetched from, asked there for its first byte too;
//! - the size is the total of the answer's `Content-Range`.
//!
//! Invariants: a status that is neither a success nor a redirect is a
//! [`HubFailure::Status`]; a missing or unusable header is named as hf-hub names it; the
//! etag and commit are plain path components (they name cache files).

use url::Url;

use crate::outgoing::{Method, OutgoingClient, OutgoingRequest, StreamedResponse};

use super::download::PIECE_IDLE_TIMEOUT;
use super::failure::HubFailure;
use super::layout::is_plain_name;

/// The range that asks for a file's first byte only.
const FIRST_BYTE: &str = "bytes=0-0";
/// How many relative redirects one file's lookup follows at most.
pub const MAX_RELATIVE_REDIRECTS: usize = 10;
/// The redirect statuses that are followed when relative.
const FOLLOWED_REDIRECTS: [u16; 5] = [301, 302, 303, 307, 308];

/// One file as the hub describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMetadata {
    /// The commit the revision resolved to.
    pub commit: String,
    /// The blob's name (a sha256 for LFS files).
    pub etag: String,
    /// The file's length in bytes.
    pub size: u64,
    /// Where the bytes are fetched from (the file's URL, or the CDN's).
    pub location: String,
}

/// Asks for the first byte of `url` (no redirect followed).
async fn first_byte(client: &OutgoingClient, url: &str) -> Result<StreamedResponse, HubFailure> {
    let request = OutgoingRequest::new(Method::Get, url)
        .map_err(HubFailure::Request)?
        .header("Range", FIRST_BYTE);
    client
        .send_streamed(request, PIECE_IDLE_TIMEOUT)
        .await
        .map_err(HubFailure::Request)
}

/// The metadata of the file at `url`.
pub async fn fetch(client: &OutgoingClient, url: &str) -> Result<FileMetadata, HubFailure> {
    let mut url = url.to_owned();
    let mut response = first_byte(client, &url).await?;
    let mut redirects = 0;
    while FOLLOWED_REDIRECTS.contains(&response.status) {
        let Some(location) = response.header("location") else {
            break;
        };
        if Url::parse(location).is_ok() {
            break;
        }
        let target = Url::parse(&url)
            .and_then(|base| base.join(location))
            .map_err(|_| HubFailure::InvalidHeader("location"))?;
        redirects += 1;
        if redirects > MAX_RELATIVE_REDIRECTS {
            return Err(HubFailure::TooManyRedirects);
        }
        url = target.to_string();
        response = first_byte(client, &url).await?;
    }
    let is_redirect = (300..400).contains(&response.status);
    if !is_redirect && !(200..300).contains(&response.status) {
        return Err(HubFailure::Status(response.status));
    }
    let etag = response
        .header("x-linked-etag")
        .or_else(|| response.header("etag"))
        .ok_or(HubFailure::MissingHeader("etag"))?;
    let etag = clean_etag(etag).ok_or(HubFailure::InvalidHeader("etag"))?;
    let commit = response
        .header("x-repo-commit")
        .ok_or(HubFailure::MissingHeader("x-repo-commit"))?
        .trim()
        .to_owned();
    if !is_plain_name(&commit) {
        return Err(HubFailure::InvalidHeader("commit_hash"));
    }
    let (sized, location) = if is_redirect {
        let location = response
            .header("location")
            .ok_or(HubFailure::MissingHeader("location"))?
            .to_owned();
        (first_byte(client, &location).await?, location)
    } else {
        (response, url)
    };
    if !(200..300).contains(&sized.status) {
        return Err(HubFailure::Status(sized.status));
    }
    let range = sized
        .header("content-range")
        .ok_or(HubFailure::MissingHeader("Content-Range"))?;
    Ok(FileMetadata {
        commit,
        etag,
        size: content_range_total(range)?,
        location,
    })
}

/// An etag without its quotes (and weak marker), when it can name a blob.
pub fn clean_etag(etag: &str) -> Option<String> {
    let etag = etag.trim();
    let etag = etag.strip_prefix("W/").unwrap_or(etag).replace('"', "");
    is_plain_name(&etag).then_some(etag)
}

/// The total length of a `Content-Range` (`bytes 0-0/1234`).
pub fn content_range_total(range: &str) -> Result<u64, HubFailure> {
    let (_, total) = range
        .rsplit_once('/')
        .ok_or(HubFailure::InvalidHeader("Content-Range"))?;
    total.trim().parse().map_err(|_| HubFailure::ParseInt)
}

/// The first byte position of a `Content-Range` (`bytes 100-199/200`).
pub fn content_range_start(range: &str) -> Option<u64> {
    let range = range.trim().strip_prefix("bytes")?.trim_start();
    let (start, _) = range.split_once('-')?;
    start.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_etag_loses_its_quotes_and_must_name_a_file() {
        assert_eq!(clean_etag("\"abc123\"").as_deref(), Some("abc123"));
        assert_eq!(clean_etag("W/\"abc123\"").as_deref(), Some("abc123"));
        assert_eq!(clean_etag("\"../x\""), None);
        assert_eq!(clean_etag("\"\""), None);
    }

    #[test]
    fn content_ranges_give_their_start_and_total() {
        assert_eq!(content_range_total("bytes 0-0/90868376"), Ok(90_868_376));
        assert_eq!(
            content_range_total("bytes 0-0"),
            Err(HubFailure::InvalidHeader("Content-Range"))
        );
        assert_eq!(
            content_range_total("bytes 0-0/*"),
            Err(HubFailure::ParseInt)
        );
        assert_eq!(content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(content_range_start("bytes */200"), None);
    }
}
