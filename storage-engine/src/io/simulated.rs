//! A simulated file for crash tests: it keeps the written image (what reads see, like the
//! page cache) apart from the durable image (what survives a power loss).
//!
//! At every `sync`, when crash recording is on, it builds crash images: the durable image
//! plus a random subset of the writes since the last sync, some of them torn at sector
//! granularity, with the length change applied or not. Reopening each image must give the
//! last committed state. Invariants: the written image lives in one fixed allocation of
//! `capacity` bytes that never moves; the random choices come from a seeded generator, so
//! a run is reproducible from its seed.

use std::cell::UnsafeCell;
use std::sync::{Arc, Mutex, MutexGuard};

use super::PageIo;
use crate::error::{Error, Result};

/// Sector size used to tear writes: a torn write lands some sectors and not others.
pub const SECTOR_BYTES: usize = 512;

/// One possible state of the disk after a power loss at a sync point.
#[derive(Debug, Clone)]
pub struct CrashImage {
    /// Number of the sync call (from 1) at which the power was lost.
    pub sync_index: u64,
    /// The bytes of the file after the crash.
    pub bytes: Vec<u8>,
}

enum PendingChange {
    Write { offset: u64, bytes: Vec<u8> },
    Grow { length: u64 },
}

struct SimulatedState {
    length: u64,
    durable: Vec<u8>,
    pending: Vec<PendingChange>,
    sync_count: u64,
    crash_variants_per_sync: usize,
    crash_images: Vec<CrashImage>,
    fail_at_sync: Option<u64>,
    random_state: u64,
}

struct SimulatedDisk {
    written: Box<[UnsafeCell<u8>]>,
    state: Mutex<SimulatedState>,
}

// SAFETY: the written image is only mutated through `write`, which the engine calls only on
// ranges no live `read` slice covers (the PageIo invariant); the bookkeeping is in a Mutex.
unsafe impl Sync for SimulatedDisk {}

/// A handle on a simulated file; clones share the same file.
#[derive(Clone)]
pub struct SimulatedIo {
    disk: Arc<SimulatedDisk>,
}

impl SimulatedIo {
    /// An empty simulated file able to grow to `capacity` bytes; `seed` drives tearing.
    pub fn new(capacity: usize, seed: u64) -> SimulatedIo {
        SimulatedIo::from_image(&[], capacity, seed)
    }

    /// A simulated file whose written and durable images both start as `image`.
    pub fn from_image(image: &[u8], capacity: usize, seed: u64) -> SimulatedIo {
        let capacity = capacity.max(image.len());
        let mut zeroed = vec![0u8; capacity].into_boxed_slice();
        zeroed[..image.len()].copy_from_slice(image);
        let raw = Box::into_raw(zeroed) as *mut [UnsafeCell<u8>];
        // SAFETY: UnsafeCell<u8> is repr(transparent) over u8, so the allocation has the
        // same layout; ownership moves from one box to the other.
        let written: Box<[UnsafeCell<u8>]> = unsafe { Box::from_raw(raw) };
        let state = SimulatedState {
            length: image.len() as u64,
            durable: image.to_vec(),
            pending: Vec::new(),
            sync_count: 0,
            crash_variants_per_sync: 0,
            crash_images: Vec::new(),
            fail_at_sync: None,
            random_state: seed ^ 0x9e37_79b9_7f4a_7c15,
        };
        SimulatedIo {
            disk: Arc::new(SimulatedDisk {
                written,
                state: Mutex::new(state),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, SimulatedState> {
        // A panic while holding this lock can only come from a test's own assertion.
        self.disk
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// From now on, build `variants` crash images at every sync (0 turns recording off).
    pub fn record_crash_images(&self, variants: usize) {
        self.state().crash_variants_per_sync = variants;
    }

    /// Takes the crash images recorded so far.
    pub fn take_crash_images(&self) -> Vec<CrashImage> {
        std::mem::take(&mut self.state().crash_images)
    }

    /// Number of syncs so far.
    pub fn sync_count(&self) -> u64 {
        self.state().sync_count
    }

    /// Makes the sync with this index (from 1) fail with an I/O error, as a dying disk would.
    pub fn fail_at_sync(&self, sync_index: u64) {
        self.state().fail_at_sync = Some(sync_index);
    }

    /// The durable image: what a power loss right now would leave.
    pub fn durable_image(&self) -> Vec<u8> {
        self.state().durable.clone()
    }

    /// The written image: what a process crash (not a power loss) would leave.
    pub fn written_image(&self) -> Vec<u8> {
        let length = self.state().length;
        self.read(0, length as usize)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    }
}

impl SimulatedState {
    fn next_random(&mut self) -> u64 {
        // splitmix64: small, seeded, good enough to pick subsets.
        self.random_state = self.random_state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.random_state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    fn build_crash_image(&mut self) -> Vec<u8> {
        let mut image = self.durable.clone();
        let pending = std::mem::take(&mut self.pending);
        for change in &pending {
            match change {
                PendingChange::Grow { length } => {
                    if self.next_random() % 2 == 0 {
                        image.resize((*length as usize).max(image.len()), 0);
                    }
                }
                PendingChange::Write { offset, bytes } => {
                    let choice = self.next_random() % 3;
                    if choice == 0 {
                        continue;
                    }
                    let tear = choice == 2;
                    for (index, sector) in bytes.chunks(SECTOR_BYTES).enumerate() {
                        if tear && self.next_random() % 2 == 0 {
                            continue;
                        }
                        let start = *offset as usize + index * SECTOR_BYTES;
                        if start + sector.len() <= image.len() {
                            image[start..start + sector.len()].copy_from_slice(sector);
                        }
                    }
                }
            }
        }
        self.pending = pending;
        image
    }

    fn make_durable(&mut self) {
        for change in std::mem::take(&mut self.pending) {
            match change {
                PendingChange::Grow { length } => {
                    let length = (length as usize).max(self.durable.len());
                    self.durable.resize(length, 0);
                }
                PendingChange::Write { offset, bytes } => {
                    let start = offset as usize;
                    self.durable[start..start + bytes.len()].copy_from_slice(&bytes);
                }
            }
        }
    }
}

impl PageIo for SimulatedIo {
    fn length(&self) -> u64 {
        self.state().length
    }

    fn read(&self, offset: u64, length: usize) -> Option<&[u8]> {
        let end = offset.checked_add(length as u64)?;
        if end > self.length() {
            return None;
        }
        let cells = self.disk.written.get(offset as usize..end as usize)?;
        // SAFETY: UnsafeCell<u8> has the layout of u8; the engine never writes a range while
        // a slice over it is alive (PageIo invariant), and the allocation never moves.
        Some(unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<u8>(), cells.len()) })
    }

    fn write(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        let mut state = self.state();
        let end = offset as usize + bytes.len();
        if end as u64 > state.length {
            return Err(Error::Io(std::io::Error::other(
                "simulated write past the end",
            )));
        }
        let cells = &self.disk.written[offset as usize..end];
        // SAFETY: see `read`: no live slice covers a range being written; UnsafeCell permits
        // writing through a shared reference, and the range lies within the allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                UnsafeCell::raw_get(cells.as_ptr()),
                bytes.len(),
            );
        }
        state.pending.push(PendingChange::Write {
            offset,
            bytes: bytes.to_vec(),
        });
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut state = self.state();
        state.sync_count += 1;
        let sync_index = state.sync_count;
        for _ in 0..state.crash_variants_per_sync {
            let bytes = state.build_crash_image();
            state.crash_images.push(CrashImage { sync_index, bytes });
        }
        if state.fail_at_sync == Some(sync_index) {
            return Err(Error::Io(std::io::Error::other("simulated sync failure")));
        }
        state.make_durable();
        Ok(())
    }

    /// A punched hole reads as zero, so the simulation writes zeros: a later read of a
    /// released page (an engine bug) sees them instead of the old content.
    fn release(&self, offset: u64, length: u64) -> Result<()> {
        let length = usize::try_from(length)
            .map_err(|_| Error::Io(std::io::Error::other("simulated release too long")))?;
        self.write(offset, &vec![0; length])
    }

    fn grow(&self, length: u64) -> Result<()> {
        if length > self.capacity() {
            return Err(Error::MapFull {
                maximum_bytes: self.capacity(),
            });
        }
        let mut state = self.state();
        if length > state.length {
            state.length = length;
            state.pending.push(PendingChange::Grow { length });
        }
        Ok(())
    }

    fn capacity(&self) -> u64 {
        self.disk.written.len() as u64
    }
}
