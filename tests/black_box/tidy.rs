//! The rules of the code base, enforced rather than only written (ARCHITECTURE.md §10, the
//! architecture review of 2026-11-25):
//! - only `src/runtime/` names glommio (outside test code);
//! - only `src/config.rs` reads the environment (outside test code);
//! - no import circle crosses the top-level folders of `src/`: the server's layers
//!   (`routes` → use cases → `coordinator` → `host` → …) import downwards only;
//! - every top-level module of `src/` has its place in the layer order that ARCHITECTURE.md
//!   §1.3 draws, and imports only modules of lower layers, or of its own layer along the
//!   arrows drawn (`layer_order`, which reads the drawing from the document itself);
//! - every `unsafe` block of the three product crates has a `// SAFETY:` comment on one of
//!   the lines just above it (or a `# Safety` section for an `unsafe fn`);
//! - assertions guard the boundaries: at least one per 1,000 lines of non-test code in
//!   `src/` and in `src/tasks/` (`assertion_density`).
//!
//! The checks read the source files as text; comments and `#[cfg(test)] mod` bodies at the
//! end of a file are left out where the rule is about non-test code.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod assertion_density;
mod layer_order;

/// How many lines above an `unsafe` block its `// SAFETY:` comment may start.
const SAFETY_COMMENT_LINES_ABOVE: usize = 8;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `directory`, recursively, sorted.
fn rust_files(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).expect("a source folder can be listed");
        for entry in entries {
            let path = entry.expect("a folder entry can be read").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether a file holds only tests (a `tests/` folder or a `*tests.rs` file).
fn is_test_file(relative: &Path) -> bool {
    let text = relative.to_string_lossy();
    text.contains("/tests/") || text.starts_with("tests/") || text.ends_with("tests.rs")
}

/// The lines of a text that are not comment lines, numbered from 1 as in the file.
fn numbered_lines_without_comments(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .collect()
}

/// The non-test code of a file, numbered as in the file: without comment lines and
/// without the `#[cfg(test)]` module that ends it.
fn numbered_code_lines(text: &str) -> Vec<(usize, &str)> {
    let code = match text.find("#[cfg(test)]\nmod ") {
        Some(start) => &text[..start],
        None => text,
    };
    numbered_lines_without_comments(code)
}

/// The non-test code of a file: without comment lines and without the `#[cfg(test)]`
/// module that ends it.
fn code_lines(text: &str) -> Vec<&str> {
    numbered_code_lines(text)
        .into_iter()
        .map(|(_, line)| line)
        .collect()
}

/// Every file of `src/`, test files included, with its path relative to `src/`.
fn all_server_sources() -> Vec<(PathBuf, String)> {
    let source = workspace_root().join("src");
    rust_files(&source)
        .into_iter()
        .map(|path| {
            let relative = path
                .strip_prefix(&source)
                .expect("under src/")
                .to_path_buf();
            let text = std::fs::read_to_string(&path).expect("a source file is UTF-8");
            (relative, text)
        })
        .collect()
}

/// The non-test files of `src/`, with their path relative to `src/`.
fn server_sources() -> Vec<(PathBuf, String)> {
    all_server_sources()
        .into_iter()
        .filter(|(relative, _)| !is_test_file(relative))
        .collect()
}

#[test]
fn only_the_runtime_names_glommio() {
    let mut breaches = Vec::new();
    for (relative, text) in server_sources() {
        if relative.starts_with("runtime") {
            continue;
        }
        for line in code_lines(&text) {
            if line.contains("glommio") {
                breaches.push(format!("src/{}: {}", relative.display(), line.trim()));
            }
        }
    }
    assert!(
        breaches.is_empty(),
        "glommio outside src/runtime/:\n{breaches:#?}"
    );
}

#[test]
fn only_the_configuration_reads_the_environment() {
    let mut breaches = Vec::new();
    for (relative, text) in server_sources() {
        if relative == Path::new("config.rs") {
            continue;
        }
        for line in code_lines(&text) {
            if line.contains("std::env") || line.contains("env::var") {
                breaches.push(format!("src/{}: {}", relative.display(), line.trim()));
            }
        }
    }
    assert!(
        breaches.is_empty(),
        "environment read outside config.rs:\n{breaches:#?}"
    );
}

/// The top-level module of `src/` a file belongs to (`routes` for `routes/tasks.rs`).
fn top_level_module(relative: &Path) -> String {
    let first = relative
        .components()
        .next()
        .expect("a path has a first component")
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// The top-level modules one line of code names through `crate::`: `crate::<module>` paths
/// and the items of a one-line `crate::{…}` group.
fn modules_named_on_line(line: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = line;
    while let Some(position) = rest.find("crate::") {
        rest = &rest[position + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|character| character.is_alphanumeric() || *character == '_')
            .collect();
        if modules.contains(&name) {
            named.insert(name);
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = item.trim().split("::").next().unwrap_or("").trim();
                if modules.contains(name) {
                    named.insert(name.to_owned());
                }
            }
        }
    }
    named
}

/// The top-level modules a file's code names through `crate::`.
fn named_modules(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    code_lines(text)
        .into_iter()
        .flat_map(|line| modules_named_on_line(line, modules))
        .collect()
}

/// The folder-level import graph of `src/`: module → modules it imports.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let sources = server_sources();
    let modules: BTreeSet<String> = sources
        .iter()
        .map(|(relative, _)| top_level_module(relative))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (relative, text) in &sources {
        let module = top_level_module(relative);
        let mut named = named_modules(text, &modules);
        named.remove(&module);
        graph.entry(module).or_default().extend(named);
    }
    graph
}

/// The modules `start` reaches through the graph.
fn reachable(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut pending: Vec<&str> = graph
        .get(start)
        .map(|targets| targets.iter().map(String::as_str).collect())
        .unwrap_or_default();
    while let Some(module) = pending.pop() {
        if seen.insert(module.to_owned())
            && let Some(targets) = graph.get(module)
        {
            pending.extend(targets.iter().map(String::as_str));
        }
    }
    seen
}

#[test]
fn no_import_circle_crosses_the_top_level_folders_of_src() {
    let graph = import_graph();
    assert!(
        graph
            .get("routes")
            .is_some_and(|targets| targets.contains("search")),
        "the graph reads imports: routes import search"
    );
    let circles: Vec<String> = graph
        .keys()
        .filter(|module| reachable(&graph, module).contains(*module))
        .map(|module| format!("{module} → {:?}", graph[module]))
        .collect();
    assert!(
        circles.is_empty(),
        "modules on an import circle:\n{circles:#?}"
    );
}

#[test]
fn the_shard_host_imports_nothing_above_it() {
    let graph = import_graph();
    let above = [
        "coordinator",
        "routes",
        "search",
        "tasks",
        "server",
        "control",
    ];
    let host = &graph["host"];
    for module in above {
        assert!(!host.contains(module), "host imports {module}: {host:?}");
    }
}

/// Whether a `// SAFETY:` comment (or a `# Safety` doc section) starts within
/// [`SAFETY_COMMENT_LINES_ABOVE`] lines above line `index`.
fn has_safety_comment(lines: &[&str], index: usize) -> bool {
    let first = index.saturating_sub(SAFETY_COMMENT_LINES_ABOVE);
    lines[first..=index]
        .iter()
        .any(|line| line.contains("SAFETY:") || line.contains("# Safety"))
}

#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    let root = workspace_root();
    let mut breaches = Vec::new();
    let mut blocks = 0;
    for crate_source in ["src", "shards/src", "storage-engine/src"] {
        for path in rust_files(&root.join(crate_source)) {
            let text = std::fs::read_to_string(&path).expect("a source file is UTF-8");
            let lines: Vec<&str> = text.lines().collect();
            for (index, line) in lines.iter().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if !code.contains("unsafe {") && !code.contains("unsafe fn") {
                    continue;
                }
                blocks += 1;
                if !has_safety_comment(&lines, index) {
                    let relative = path.strip_prefix(&root).unwrap_or(&path);
                    breaches.push(format!("{}:{}", relative.display(), index + 1));
                }
            }
        }
    }
    assert!(blocks > 0, "the scan finds the unsafe blocks");
    assert!(
        breaches.is_empty(),
        "unsafe without a SAFETY comment:\n{breaches:#?}"
    );
}
