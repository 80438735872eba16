//! `store_usage`: where the bytes of a page-store file go, tree by tree.
//!
//! Opens a store (never creating it; a copy is safest, the server must not run on it), then
//! prints a markdown report: the file's pages (used, free, past the high-water mark), the
//! integrity walk's page counts, and per tree its entries, key and value bytes, and the bytes
//! its entries take priced as the pages they occupy (`stored_entry_bytes`: leaf cell and slot,
//! or cell plus whole overflow pages), sorted by that price. The priced bytes leave out leaf
//! fill and branch pages; their sum against the used pages shows how full the leaves are.
//!
//! Usage: `store_usage FILE [PAGE_BYTES]` (page size defaults to the engine's default).

use std::path::Path;
use std::process::ExitCode;

use storage_engine::{Database, Direction, Options, PAGE_BYTES_DEFAULT, stored_entry_bytes};

/// Bytes per mebibyte.
const MEBIBYTE: f64 = 1024.0 * 1024.0;

/// What one tree holds.
#[derive(Default)]
struct TreeUsage {
    name: String,
    entries: u64,
    key_bytes: u64,
    value_bytes: u64,
    priced_bytes: u64,
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = arguments.first() else {
        eprintln!("usage: store_usage FILE [PAGE_BYTES]");
        return ExitCode::from(2);
    };
    let page_bytes = match arguments.get(1).map(|text| text.parse::<usize>()) {
        None => PAGE_BYTES_DEFAULT,
        Some(Ok(bytes)) => bytes,
        Some(Err(error)) => {
            eprintln!("store_usage: page size: {error}");
            return ExitCode::from(2);
        }
    };
    match report(Path::new(file), page_bytes) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("store_usage: {error}");
            ExitCode::FAILURE
        }
    }
}

fn report(file: &Path, page_bytes: usize) -> storage_engine::Result<String> {
    let options = Options {
        page_bytes,
        create: false,
        ..Options::default()
    };
    let database = Database::open(file, options)?;
    let stats = database.stats();
    let walked = database.check_integrity()?;
    let mut trees = tree_usages(&database, page_bytes)?;
    trees.sort_by_key(|tree| std::cmp::Reverse(tree.priced_bytes));
    let mebibytes = |pages: u64| (pages * stats.page_bytes) as f64 / MEBIBYTE;
    let mut text = format!(
        "# {}\n\n| pages | count | MiB |\n|---|---:|---:|\n\
         | file | {} | {:.1} |\n| used | {} | {:.1} |\n| free | {} | {:.1} |\n\
         | tree pages (walked) | {} | {:.1} |\n| overflow pages (walked) | {} | {:.1} |\n\n",
        file.display(),
        stats.file_bytes / stats.page_bytes,
        stats.file_bytes as f64 / MEBIBYTE,
        stats.used_pages,
        mebibytes(stats.used_pages),
        stats.free_pages,
        mebibytes(stats.free_pages),
        walked.tree_pages,
        mebibytes(walked.tree_pages),
        walked.overflow_pages,
        mebibytes(walked.overflow_pages),
    );
    text.push_str(
        "| tree | entries | key MiB | value MiB | priced MiB | priced B/entry |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for tree in &trees {
        text.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            tree.name,
            tree.entries,
            tree.key_bytes as f64 / MEBIBYTE,
            tree.value_bytes as f64 / MEBIBYTE,
            tree.priced_bytes as f64 / MEBIBYTE,
            tree.priced_bytes as f64 / tree.entries.max(1) as f64,
        ));
    }
    let priced: u64 = trees.iter().map(|tree| tree.priced_bytes).sum();
    text.push_str(&format!(
        "\nPriced entries {:.1} MiB of {:.1} MiB used ({:.0} %).\n",
        priced as f64 / MEBIBYTE,
        mebibytes(stats.used_pages),
        100.0 * priced as f64 / (stats.used_pages * stats.page_bytes).max(1) as f64,
    ));
    Ok(text)
}

fn tree_usages(database: &Database, page_bytes: usize) -> storage_engine::Result<Vec<TreeUsage>> {
    let transaction = database.begin_read();
    let mut usages = Vec::new();
    for name in transaction.tree_names()? {
        let Some(tree) = transaction.open_tree(&name)? else {
            continue;
        };
        let mut usage = TreeUsage {
            name,
            ..TreeUsage::default()
        };
        let mut entries = tree.range(
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            Direction::Forward,
        )?;
        while let Some((key, value)) = entries.next().transpose()? {
            usage.entries += 1;
            usage.key_bytes += key.len() as u64;
            usage.value_bytes += value.len() as u64;
            usage.priced_bytes += stored_entry_bytes(page_bytes, key.len(), value.len()) as u64;
        }
        usages.push(usage);
    }
    Ok(usages)
}
