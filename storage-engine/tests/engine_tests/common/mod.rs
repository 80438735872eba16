//! Helpers shared by the storage engine's integration tests.
#![allow(dead_code)]

pub mod state;
pub mod vector_files;
