//! Free space: which pages are free, the allocator and giving blocks back.

pub mod free_list;
pub mod free_pages;
pub mod release;
