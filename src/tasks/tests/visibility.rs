//! What `coresearch_write_visibility_seconds` counts: every succeeded document write of a
//! finished batch, from its registration to its end; nothing else.

use super::{addition, at, task};
use crate::histogram::Histogram;
use crate::tasks::control_side::{WRITE_VISIBILITY_BOUNDS, observe_write_visibility};
use crate::tasks::model::{KindWithContent, Status};

#[test]
fn only_succeeded_document_writes_are_counted_with_their_wait() {
    let mut written = task(1, addition("movies", 10));
    written.status = Status::Succeeded;
    written.finished_at = Some(at(1) + time::Duration::milliseconds(2_500));
    let mut failed = task(2, addition("movies", 10));
    failed.status = Status::Failed;
    failed.finished_at = Some(at(9));
    let mut deletion = task(
        3,
        KindWithContent::IndexDeletion {
            index_uid: "books".to_owned(),
        },
    );
    deletion.status = Status::Succeeded;
    deletion.finished_at = Some(at(20));
    let still_waiting = task(4, addition("movies", 1));

    let mut histogram = Histogram::new(&WRITE_VISIBILITY_BOUNDS);
    observe_write_visibility(&mut histogram, &[written, failed, deletion, still_waiting]);

    assert_eq!(histogram.count(), 1, "the succeeded addition alone");
    assert!((histogram.sum_seconds() - 2.5).abs() < 1e-9);
    // 2.5 s falls in the bucket whose bound is 2.5 s, not in the one below.
    let bucket = WRITE_VISIBILITY_BOUNDS
        .iter()
        .position(|bound| (*bound - 2.5).abs() < 1e-9)
        .expect("a 2.5 s bound");
    let cumulative = histogram.cumulative_counts();
    assert_eq!((cumulative[bucket - 1], cumulative[bucket]), (0, 1));
}
