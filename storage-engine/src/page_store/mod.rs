//! Page I/O: pages in a file, their layout, checksums and the commit slots.

pub mod bytes;
pub mod checksum;
pub mod layout;
pub mod meta;
pub mod page;
pub mod page_buffers;
pub mod pager;
