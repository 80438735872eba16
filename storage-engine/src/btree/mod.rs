//! The B+tree over pages: nodes, cursors, the copy-on-write editor and the catalog.

pub mod catalog;
pub mod cursor;
pub mod editor;
pub mod leaf_cache;
pub mod node;
pub mod path_lookup;
pub mod tree_fill;
