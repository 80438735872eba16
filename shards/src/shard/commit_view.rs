//! What every read snapshot of one commit shares, made once per commit instead of once per
//! read: the shard's state (live ids, settings), the analyzer its text settings configure,
//! the fields map, the word dictionary and the normalized synonyms (the last three on first
//! use), the derivations and best splits of the query words searched so far, the unions over the prefixes
//! and facet value ranges searched so far, the facet columns of the fields counted so far and
//! the facet search forms of the fields facet-searched so far.
//!
//! Decoding the live-ids bitmap and building the analyzer cost milliseconds on a shard of a
//! few hundred thousand documents; a search that paid them on every read spent most of its
//! time there.
//!
//! A batch's commit warms the view of its commit before readers see it (see
//! [`crate::shard::Shard::commit_warmed`]): while it does, [`CommitViews`] holds the snapshot
//! of the commit before (`frozen`), and every snapshot taken reads that one.
//!
//! Memory: every cache is charged to the shard's [`CacheAccount`] (see
//! [`crate::cache_meter`]), the dictionary whatever the budget (searches need it), the memos
//! within it.
//!
//! Invariants: a [`CommitView`] describes exactly the commit whose transaction id it carries
//! (commits are immutable, so a view never goes stale); views of commits with equal states
//! share their caches (a repack or a release of free space changes no entry, see
//! [`CommitView::load_after`]); [`CommitViews`] keeps the view of the
//! newest commit read so far; a snapshot of an older commit builds its own view and leaves the
//! newer one in place; a frozen snapshot is held only between a batch's commit and the
//! publication of its view (a [`Frozen`] guard thaws it whatever happens in between); nothing
//! is dropped while a lock of [`CommitViews`] is held (a reader waiting for one never waits for
//! a view's caches to be freed, nor for the low-priority indexing thread to be scheduled again
//! in the middle of such a free).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use storage_engine::{Direction, ReadTransaction};

use super::range_unions::RangeUnions;
use super::state::ShardState;
use super::word_touches::TouchedWords;
use crate::analysis::Analyzer;
use crate::cache_meter::CacheAccount;
use crate::cache_scale::CacheScale;
use crate::error::{ShardError, ShardResult};
use crate::index::document_codec::DecoderCache;
use crate::index::keys::decode_field_id;
use crate::index::trees::FIELDS_TREE;
use crate::search::derivation_carry::DictionaryDelta;
use crate::search::derivation_memo::{DerivationMemo, SETTLE_TIME_MAX};
use crate::search::dictionary::{Dictionary, build_dictionary};
use crate::search::facet_columns::FacetColumns;
use crate::search::facet_forms::FacetForms;
use crate::search::prefix_carry::{CARRY_TIME_MAX, carry_prefix_unions, carry_prefix_words};
use crate::search::prefix_unions::PrefixUnions;
use crate::search::prefix_words::PrefixWords;
use crate::search::split_words::SplitMemo;
use crate::search::term_postings::{TermPostingsMemo, carry_term_postings};
use crate::search::terms::{Synonyms, normalized_synonyms};
use crate::search::touched_postings::TouchedPostings;

/// Field path → field id.
pub type FieldsMap = BTreeMap<String, u16>;

/// The shared, read-only view of one commit.
pub struct CommitView {
    commit: u64,
    state: ShardState,
    /// The analyzer and the caches: shared with the views of later commits that changed no
    /// entry (see [`CommitViews::view`]).
    shared: Arc<Shared>,
}

/// What the views of commits with the same entries share.
struct Shared {
    analyzer: Analyzer,
    fields_map: OnceLock<Arc<FieldsMap>>,
    dictionary: OnceLock<Arc<Dictionary>>,
    synonyms: OnceLock<Synonyms>,
    derivations: Arc<DerivationMemo>,
    prefix_unions: PrefixUnions,
    prefix_words: PrefixWords,
    term_postings: TermPostingsMemo,
    range_unions: RangeUnions,
    facet_columns: FacetColumns,
    facet_forms: FacetForms,
    splits: SplitMemo,
    /// Where the dictionary is charged (the memos hold the account too).
    account: Arc<CacheAccount>,
}

impl Shared {
    fn new(state: &ShardState, account: &Arc<CacheAccount>) -> Shared {
        let scale = CacheScale::for_documents(state.document_ids.len());
        Shared {
            analyzer: Analyzer::new(&state.text_settings),
            fields_map: OnceLock::new(),
            dictionary: OnceLock::new(),
            synonyms: OnceLock::new(),
            derivations: Arc::new(DerivationMemo::charging(Arc::clone(account))),
            prefix_unions: PrefixUnions::charging(Arc::clone(account), scale),
            prefix_words: PrefixWords::charging(Arc::clone(account)),
            term_postings: TermPostingsMemo::charging(Arc::clone(account), scale),
            range_unions: RangeUnions::charging(Arc::clone(account), scale),
            facet_columns: FacetColumns::charging(Arc::clone(account), scale),
            facet_forms: FacetForms::charging(Arc::clone(account)),
            splits: SplitMemo::charging(Arc::clone(account)),
            account: Arc::clone(account),
        }
    }

    /// Sets the dictionary unless one is set already, charging the one set; answers the
    /// dictionary the view holds.
    fn set_dictionary(&self, dictionary: Arc<Dictionary>) -> Arc<Dictionary> {
        let kept = self.dictionary.get_or_init(|| {
            self.account.charge_anyway(dictionary.bytes());
            dictionary
        });
        Arc::clone(kept)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(dictionary) = self.dictionary.get() {
            self.account.release(dictionary.bytes());
        }
    }
}

impl CommitView {
    fn load(read: &ReadTransaction, account: &Arc<CacheAccount>) -> ShardResult<CommitView> {
        let state = ShardState::load_read(read)?;
        Ok(CommitView {
            commit: read.transaction_id(),
            shared: Arc::new(Shared::new(&state, account)),
            state,
        })
    }

    /// The view of `read`'s commit, sharing the caches of `earlier` (an earlier commit's
    /// view) when the two states are equal: a commit that changes an entry the caches read
    /// always changes the state too (a batch records its uid and its documents, a settings
    /// change its settings), so equal states mean the commits between only rewrote pages or
    /// gave free ones back (a repack, a release of free space).
    fn load_after(read: &ReadTransaction, earlier: &CommitView) -> ShardResult<CommitView> {
        let state = ShardState::load_read(read)?;
        let shared = if state == earlier.state {
            Arc::clone(&earlier.shared)
        } else {
            Arc::new(Shared::new(&state, &earlier.shared.account))
        };
        Ok(CommitView {
            commit: read.transaction_id(),
            state,
            shared,
        })
    }

    pub fn state(&self) -> &ShardState {
        &self.state
    }

    /// The transaction id of the commit this view describes.
    pub fn commit(&self) -> u64 {
        self.commit
    }

    /// The analyzer of this commit's text settings.
    pub fn analyzer(&self) -> &Analyzer {
        &self.shared.analyzer
    }

    /// The fields map, read from `read` (a transaction of this commit) on first use.
    pub fn fields_map(&self, read: &ReadTransaction) -> ShardResult<Arc<FieldsMap>> {
        made_once(&self.shared.fields_map, || read_fields_map(read))
    }

    /// The synonyms setting normalized by this commit's analyzer, made on first use.
    pub fn synonyms(&self) -> &Synonyms {
        self.shared
            .synonyms
            .get_or_init(|| normalized_synonyms(&self.shared.analyzer, &self.state.text_settings))
    }

    /// The query words already derived against this commit's dictionary.
    pub fn derivations(&self) -> &DerivationMemo {
        &self.shared.derivations
    }

    /// Lets this view carry the derivations of `earlier` (the view of the commit just
    /// before, made by the batch whose changed words `delta` gives) instead of deriving its
    /// words afresh. `earlier`'s memo is settled first (see [`DerivationMemo::settle`]), as
    /// this view's inheritance takes its own away; then this view's, so that the commit's
    /// first searches find their words carried already (both within one
    /// [`SETTLE_TIME_MAX`]; what is left is carried by the first search asking for it).
    /// Nothing happens, and `delta` is not made, when the two views share their caches,
    /// their text settings differ (a derivation depends on them) or `earlier` holds no
    /// derivation; nor when `delta` gives none.
    pub fn inherit_derivations(
        &self,
        earlier: &CommitView,
        delta: impl FnOnce() -> Option<DictionaryDelta>,
    ) {
        debug_assert_eq!(earlier.commit + 1, self.commit, "the commit just before");
        let earlier_memo = &earlier.shared.derivations;
        if Arc::ptr_eq(&self.shared, &earlier.shared)
            || self.state.text_settings != earlier.state.text_settings
        {
            return;
        }
        let deadline = Instant::now() + SETTLE_TIME_MAX;
        // What `earlier` could still carry from the commit before it would be lost once this
        // view inherits it: carried for good first.
        if let Some(dictionary) = earlier.built_dictionary() {
            earlier_memo.settle(&dictionary, &earlier.state.text_settings, deadline);
        }
        if earlier_memo.is_empty() {
            return;
        }
        let Some(delta) = delta() else {
            return;
        };
        let memo = &self.shared.derivations;
        memo.inherit(earlier_memo, Arc::new(delta));
        if let Some(dictionary) = self.built_dictionary() {
            memo.settle(&dictionary, &self.state.text_settings, deadline);
        }
    }

    /// Carries the prefix unions, prefix words and term postings that searches asked for on
    /// `earlier` (the view of the commit just before, read by `read`) over the batch `touched`
    /// describes, on the same rules as [`CommitView::inherit_derivations`]; an entry the carry
    /// could not bring up to date (a read that failed, the time limit) is left to the first
    /// search that needs it.
    pub fn inherit_search_entries(
        &self,
        earlier: &CommitView,
        read: &ReadTransaction,
        touched: &TouchedWords,
    ) {
        debug_assert_eq!(earlier.commit + 1, self.commit, "the commit just before");
        debug_assert_eq!(read.transaction_id(), self.commit, "a read of this commit");
        if Arc::ptr_eq(&self.shared, &earlier.shared)
            || self.state.text_settings != earlier.state.text_settings
        {
            return;
        }
        let deadline = Instant::now() + CARRY_TIME_MAX;
        let Ok(mut postings) = TouchedPostings::open(read, touched) else {
            return;
        };
        let (earlier, into) = (&earlier.shared, &self.shared);
        carry_prefix_unions(
            &earlier.prefix_unions,
            &into.prefix_unions,
            &mut postings,
            deadline,
        )
        .ok();
        carry_prefix_words(
            &earlier.prefix_words,
            &into.prefix_words,
            &postings,
            deadline,
        )
        .ok();
        carry_term_postings(
            &earlier.term_postings,
            &into.term_postings,
            read,
            &into.prefix_unions,
            touched,
            deadline,
        )
        .ok();
    }

    /// Whether this commit keeps prefix entries or term postings a batch's commit could
    /// carry.
    pub fn has_entries_to_carry(&self) -> bool {
        !self.shared.prefix_unions.is_empty()
            || !self.shared.prefix_words.is_empty()
            || !self.shared.term_postings.is_empty()
    }

    /// The unions over prefix expansions computed on this commit.
    pub fn prefix_unions(&self) -> &PrefixUnions {
        &self.shared.prefix_unions
    }

    /// The words of the prefixes read on this commit.
    pub fn prefix_words(&self) -> &PrefixWords {
        &self.shared.prefix_words
    }

    /// The postings of the query terms read on this commit, over every document.
    pub(crate) fn term_postings(&self) -> &TermPostingsMemo {
        &self.shared.term_postings
    }

    /// The unions over facet value ranges computed on this commit.
    pub fn range_unions(&self) -> &RangeUnions {
        &self.shared.range_unions
    }

    /// The facet columns of the fields counted on this commit.
    pub fn facet_columns(&self) -> &FacetColumns {
        &self.shared.facet_columns
    }

    /// The facet search forms of facet values made on this commit.
    pub fn facet_forms(&self) -> &FacetForms {
        &self.shared.facet_forms
    }

    /// The best splits of the query words searched on this commit.
    pub fn split_memo(&self) -> &SplitMemo {
        &self.shared.splits
    }

    /// The word dictionary, built from `read` (a transaction of this commit) on first use.
    pub fn dictionary(&self, read: &ReadTransaction) -> ShardResult<Arc<Dictionary>> {
        if let Some(built) = self.shared.dictionary.get() {
            return Ok(Arc::clone(built));
        }
        let built = Arc::new(build_dictionary(read)?);
        Ok(self.shared.set_dictionary(built))
    }

    /// The word dictionary, if a search or the warming built it already.
    pub fn built_dictionary(&self) -> Option<Arc<Dictionary>> {
        self.shared.dictionary.get().map(Arc::clone)
    }

    /// Gives the view its dictionary, made otherwise than from the tree (it must hold
    /// exactly this commit's `word_documents` keys); one built already stays.
    pub fn adopt_dictionary(&self, dictionary: Dictionary) {
        self.shared.set_dictionary(Arc::new(dictionary));
    }
}

/// The value of `cell`, made by `make` if it has none yet (a failed `make` leaves it empty).
fn made_once<T>(
    cell: &OnceLock<Arc<T>>,
    make: impl FnOnce() -> ShardResult<T>,
) -> ShardResult<Arc<T>> {
    if let Some(made) = cell.get() {
        return Ok(Arc::clone(made));
    }
    let made = Arc::new(make()?);
    Ok(Arc::clone(cell.get_or_init(|| made)))
}

/// The view of the newest commit a snapshot was taken of, and the shard's prepared document
/// dictionaries (those of every commit: a dictionary id never changes meaning).
pub struct CommitViews {
    newest: Mutex<Option<Arc<CommitView>>>,
    /// While a batch's commit warms its view: the snapshot readers keep reading.
    frozen: Mutex<Option<(ReadTransaction, Arc<CommitView>)>>,
    decoders: Arc<DecoderCache>,
    /// What the views' caches hold, charged to the process's budget.
    account: Arc<CacheAccount>,
}

/// Readers held on a commit until the next one's view is published; dropping the guard
/// without publishing lets readers see the newest commit again (its view then made lazily).
pub struct Frozen<'v> {
    views: &'v CommitViews,
}

impl Frozen<'_> {
    /// Makes `view` the newest and lets readers see its commit. The views it replaces are
    /// let go after the locks, on this (the indexing) thread: see [`let_go`].
    pub fn publish(self, view: Arc<CommitView>) {
        let mut newest = self.views.lock();
        let replaced = if newest
            .as_ref()
            .is_none_or(|cached| cached.commit < view.commit)
        {
            newest.replace(view)
        } else {
            Some(view)
        };
        // Released while `newest` is held: a reader never finds neither in place.
        let thawed = self.views.lock_frozen().take();
        drop(newest);
        let_go(replaced.into_iter().chain(thawed.map(|(_, view)| view)));
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        let thawed = self.views.lock_frozen().take();
        drop(thawed);
    }
}

/// Longest the thread letting go of an earlier commit's views waits for readers to finish
/// with them.
pub const LET_GO_WAIT_MAX: Duration = Duration::from_millis(100);
/// How often it looks.
const LET_GO_POLL: Duration = Duration::from_millis(1);

/// Drops `views` on this thread once no reader holds them, waiting at most
/// [`LET_GO_WAIT_MAX`] (then a reader still holding one drops it when done).
///
/// A view's caches (prefix unions and words, facet columns, derivations: up to hundreds of
/// MiB over a shard) are freed by whoever drops its last reference. Left to chance, that is a
/// search on a serving core finishing just after a publication, which then spends
/// milliseconds freeing; the indexing thread publishing the commit waits instead (a search
/// holds its snapshot for milliseconds).
///
/// The same view given twice (the view readers were held on is usually the one the new view
/// replaces) is let go once: a copy of one's own never counts as a reader.
fn let_go<View>(views: impl Iterator<Item = Arc<View>>) {
    let mut distinct: Vec<Arc<View>> = Vec::new();
    for view in views {
        if !distinct.iter().any(|kept| Arc::ptr_eq(kept, &view)) {
            distinct.push(view);
        }
    }
    let started = Instant::now();
    for view in distinct {
        while Arc::strong_count(&view) > 1 && started.elapsed() < LET_GO_WAIT_MAX {
            std::thread::sleep(LET_GO_POLL);
        }
        drop(view);
    }
}

impl CommitViews {
    /// No view yet; the views' caches are charged to `account`.
    pub fn charging(account: Arc<CacheAccount>) -> CommitViews {
        CommitViews {
            newest: Mutex::new(None),
            frozen: Mutex::new(None),
            decoders: Arc::default(),
            account,
        }
    }

    /// The bytes the caches of this shard's views hold.
    pub fn cache_bytes(&self) -> usize {
        self.account.held()
    }

    /// The prepared document dictionaries of the shard.
    pub fn decoders(&self) -> &Arc<DecoderCache> {
        &self.decoders
    }

    /// The view of the commit `read` sees.
    pub fn view(&self, read: &ReadTransaction) -> ShardResult<Arc<CommitView>> {
        let commit = read.transaction_id();
        if let Some(view) = &*self.lock() {
            if view.commit == commit {
                return Ok(Arc::clone(view));
            }
        }
        let earlier = self.lock().clone();
        let view = Arc::new(match earlier {
            Some(earlier) if earlier.commit < commit => CommitView::load_after(read, &earlier)?,
            _ => CommitView::load(read, &self.account)?,
        });
        let mut newest = self.lock();
        let replaced = if newest.as_ref().is_none_or(|cached| cached.commit < commit) {
            newest.replace(Arc::clone(&view))
        } else {
            None
        };
        // The earlier view is let go after the lock (its caches may take a while to free).
        drop(newest);
        drop(replaced);
        Ok(view)
    }

    /// Holds readers on `read`'s commit (whose view is `view`) until the guard goes.
    pub fn freeze(&self, read: ReadTransaction, view: Arc<CommitView>) -> Frozen<'_> {
        let replaced = self.lock_frozen().replace((read, view));
        drop(replaced);
        Frozen { views: self }
    }

    /// The snapshot readers are held on, if any: another transaction on it and its view.
    pub fn frozen(&self) -> Option<(ReadTransaction, Arc<CommitView>)> {
        self.lock_frozen()
            .as_ref()
            .map(|(read, view)| (read.clone(), Arc::clone(view)))
    }

    /// Whether the newest view keeps prefix entries or term postings a batch's commit could
    /// carry.
    pub fn newest_has_entries_to_carry(&self) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|view| view.has_entries_to_carry())
    }

    /// A new view of `read`'s commit, not shared with readers until published.
    pub fn unpublished(&self, read: &ReadTransaction) -> ShardResult<Arc<CommitView>> {
        Ok(Arc::new(CommitView::load(read, &self.account)?))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<CommitView>>> {
        // A panic while holding the lock leaves a valid value (a whole view or none).
        self.newest.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_frozen(&self) -> MutexGuard<'_, Option<(ReadTransaction, Arc<CommitView>)>> {
        // The same: the value is replaced whole.
        self.frozen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Field path → field id, for every field ever seen by the shard.
fn read_fields_map(read: &ReadTransaction) -> ShardResult<FieldsMap> {
    let mut map = FieldsMap::new();
    let Some(tree) = read.open_tree(FIELDS_TREE)? else {
        return Ok(map);
    };
    for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
        let (key, value) = entry?;
        let path =
            String::from_utf8(key.to_vec()).map_err(|_| ShardError::corrupted("field path"))?;
        map.insert(path, decode_field_id(value)?);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread::{self, ThreadId};

    use super::*;

    /// Records the thread that drops it.
    struct DroppedOn(mpsc::Sender<ThreadId>);

    impl Drop for DroppedOn {
        fn drop(&mut self) {
            self.0.send(thread::current().id()).ok();
        }
    }

    #[test]
    fn a_view_is_let_go_on_the_publishing_thread_once_its_reader_is_done() {
        let (sender, dropped_on) = mpsc::channel();
        let view = Arc::new(DroppedOn(sender));
        let (held, reader_holds) = mpsc::channel();
        let reader = {
            let view = Arc::clone(&view);
            thread::spawn(move || {
                held.send(()).ok();
                thread::sleep(Duration::from_millis(20));
                drop(view);
            })
        };
        reader_holds.recv().expect("the reader holds the view");
        let_go(std::iter::once(view));
        reader.join().expect("the reader ends");
        assert_eq!(
            dropped_on.recv().expect("the view was dropped"),
            thread::current().id(),
            "freed by the thread letting go, not by the reader"
        );
    }

    #[test]
    fn a_view_given_twice_is_let_go_without_waiting_for_itself() {
        let (sender, dropped_on) = mpsc::channel();
        let view = Arc::new(DroppedOn(sender));
        let started = Instant::now();
        let_go([Arc::clone(&view), view].into_iter());
        assert!(
            started.elapsed() < LET_GO_WAIT_MAX / 2,
            "waited {:?} for its own copy",
            started.elapsed()
        );
        assert_eq!(dropped_on.try_recv(), Ok(thread::current().id()));
    }
}
