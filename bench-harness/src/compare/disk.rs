//! The size of a directory tree on disk, both apparent (the sum of file lengths) and
//! allocated (the blocks the file system holds, which is what sparse or preallocated files
//! really cost).
//!
//! Invariants: symbolic links are not followed (a link counts as itself); entries that vanish
//! or cannot be read during the walk count as zero rather than failing the measurement.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Bytes per block in `st_blocks` (POSIX fixes it at 512 whatever the file system).
const STAT_BLOCK_BYTES: u64 = 512;

/// The size of a tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Sum of the file lengths.
    pub apparent_bytes: u64,
    /// Sum of the allocated blocks, in bytes.
    pub allocated_bytes: u64,
}

/// The size of the tree under `directory` (zero when it does not exist).
pub fn disk_usage(directory: &Path) -> DiskUsage {
    let mut usage = DiskUsage::default();
    let Ok(entries) = std::fs::read_dir(directory) else {
        return usage;
    };
    for entry in entries.flatten() {
        let Ok(metadata) = entry.path().symlink_metadata() else {
            continue;
        };
        if metadata.is_dir() {
            let inner = disk_usage(&entry.path());
            usage.apparent_bytes += inner.apparent_bytes;
            usage.allocated_bytes += inner.allocated_bytes;
        } else {
            usage.apparent_bytes += metadata.len();
            usage.allocated_bytes += metadata.blocks() * STAT_BLOCK_BYTES;
        }
    }
    usage
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nested_files_are_summed_and_sparse_files_allocate_less_than_their_length() {
        let root = std::env::temp_dir().join(format!("disk-usage-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("inner")).expect("create_dir_all succeeds");
        std::fs::write(root.join("a"), vec![1u8; 10_000]).expect("write succeeds");
        std::fs::write(root.join("inner/b"), vec![2u8; 5_000]).expect("write succeeds");
        let sparse = std::fs::File::create(root.join("inner/sparse")).expect("create succeeds");
        sparse.set_len(64 * 1024 * 1024).expect("set_len succeeds");
        let usage = disk_usage(&root);
        assert_eq!(usage.apparent_bytes, 15_000 + 64 * 1024 * 1024);
        assert!(usage.allocated_bytes >= 15_000, "{usage:?}");
        assert!(usage.allocated_bytes < 1024 * 1024, "{usage:?}");
        assert_eq!(disk_usage(&root.join("missing")), DiskUsage::default());
        std::fs::remove_dir_all(&root).expect("remove_dir_all succeeds");
    }
}
