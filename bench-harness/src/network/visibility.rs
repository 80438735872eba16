//! How many documents a network search sees while the network changes: the leader is asked
//! a placeholder search (`q` empty, `limit` 0) between the polls of the change, and the
//! smallest and largest `estimatedTotalHits` it answered are kept. A network that always
//! shows every document answers the document count every time; a smaller minimum means a
//! search in that window missed documents (a shard asked of an instance that did not hold
//! its documents yet, or held them no more).
//!
//! Invariants: an answer that is not 200, has no count, or reports `remoteErrors` is
//! counted as failed and not as a count; the placeholder search counts every document of
//! the index (both servers count placeholder candidates exactly).

use serde_json::json;

use super::cluster::Instance;

/// What the searches during a change saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Visibility {
    /// Searches answered with a count.
    pub samples: u64,
    /// Searches that failed or reported remote errors.
    pub failures: u64,
    /// The smallest count answered.
    pub minimum: Option<u64>,
    /// The largest count answered.
    pub maximum: Option<u64>,
}

impl Visibility {
    /// Asks `instance` how many documents of index `uid` a network search sees.
    pub fn sample(&mut self, instance: &mut Instance, uid: &str) {
        let path = format!("/indexes/{uid}/search");
        let count = instance
            .client
            .send_json("POST", &path, &json!({"q": "", "limit": 0}))
            .ok()
            .filter(|response| response.status == 200)
            .and_then(|response| response.json().ok())
            .filter(|answer| {
                answer
                    .get("remoteErrors")
                    .and_then(|errors| errors.as_object())
                    .is_none_or(|errors| errors.is_empty())
            })
            .and_then(|answer| answer["estimatedTotalHits"].as_u64());
        match count {
            Some(count) => {
                self.samples += 1;
                self.minimum = Some(self.minimum.map_or(count, |minimum| minimum.min(count)));
                self.maximum = Some(self.maximum.map_or(count, |maximum| maximum.max(count)));
            }
            None => self.failures += 1,
        }
    }
}
