//! Layer 4, the B+tree: copy-on-write trees of sorted keys over verified pages.
//!
//! What it does:
//! - `node`: dirty nodes, page-sized buffers in the on-disk format changed in place;
//! - `cursor`: point lookups and a stack cursor over committed pages and dirty nodes, and the
//!   iteration `Direction`;
//! - `editor`: copy-on-write insert, delete, split, merge and drop, and the post-order
//!   checksumming of dirty nodes at commit; `leaf_cache` lets a run of nearby puts skip the
//!   descent from the root;
//! - `path_lookup`: point lookups that reuse the previous lookup's path;
//! - `tree_fill`: how full a tree's pages are;
//! - `catalog`: the format of the catalog, the tree that maps tree names to roots.
//!
//! May import: `free_space/` (the editor's `Allocator`, the page-number hasher),
//! `page_store/` and `crate::error`. It knows nothing of transactions, snapshots or commits:
//! callers hand it a `Source` (pager and dirty nodes) or an `Editor`.
//!
//! Invariants:
//! - a committed page is never changed: the editor copies it to a newly allocated page and
//!   frees the old one for after the commit;
//! - every dirty node is a valid page once an operation returns; a branch has `count + 1`
//!   children; keys ascend strictly within a node and stay within the separators above it;
//! - no walk descends past `TREE_DEPTH_MAX` levels, so a damaged tree cannot loop.

pub mod catalog;
pub mod cursor;
pub mod editor;
pub mod leaf_cache;
pub mod node;
pub mod path_lookup;
pub mod tree_fill;
