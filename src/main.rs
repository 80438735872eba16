//! The `coresearch` binary.

fn main() {}
