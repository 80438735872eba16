//! ARCHITECTURE.md §10 rule 11: assertions guard the boundaries where an invariant can break
//! (queue order, batch membership, task state transitions, shard ownership), at least
//! [`ASSERTIONS_PER_THOUSAND_LINES_MIN`] per 1,000 lines of non-test code in `src/` and in
//! `src/tasks/` (issue #76 item 7), so the density cannot fall back unnoticed.
//!
//! The counting rule:
//! - files: every `.rs` file under the folder but test files (a `tests/` folder, a name
//!   ending in `tests.rs`) and `src/test_support.rs`;
//! - lines: every line but blank lines, comment lines (`//`, `//!`, `///`) and the lines of
//!   every `#[cfg(test)]` module with a body (`mod name {` to its closing brace at the same
//!   indentation), wherever it sits in the file; `#[cfg(test)] mod name;` is one line;
//! - assertions: each `assert!`, `assert_eq!`, `assert_ne!`, `debug_assert!`,
//!   `debug_assert_eq!` and `debug_assert_ne!` on those lines (`unreachable!`, `panic!` and
//!   `expect` do not count).

use std::path::Path;

/// The fewest assertions per 1,000 counted lines, in `src/` and in `src/tasks/`.
const ASSERTIONS_PER_THOUSAND_LINES_MIN: usize = 1;

/// The macros counted as assertions.
const ASSERTION_MACROS: [&str; 6] = [
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
];

/// Counted lines and assertions of some files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Density {
    lines: usize,
    assertions: usize,
}

impl Density {
    fn add(&mut self, text: &str) {
        for line in counted_lines(text) {
            self.lines += 1;
            self.assertions += assertions_on(line);
        }
    }

    fn per_thousand_lines(self) -> f64 {
        self.assertions as f64 * 1000.0 / self.lines.max(1) as f64
    }

    fn meets_the_minimum(self) -> bool {
        self.assertions * 1000 >= ASSERTIONS_PER_THOUSAND_LINES_MIN * self.lines
    }
}

impl std::fmt::Display for Density {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} assertions in {} lines: {:.2} per 1,000",
            self.assertions,
            self.lines,
            self.per_thousand_lines()
        )
    }
}

/// Whether a `#[cfg(test)]` attribute (then any other attributes) puts line `index` in a
/// test module with a body: answers the index of that module's `mod` line.
fn test_module_at(lines: &[&str], index: usize) -> Option<usize> {
    if lines[index].trim() != "#[cfg(test)]" {
        return None;
    }
    let mut next = index + 1;
    while next < lines.len() && lines[next].trim_start().starts_with("#[") {
        next += 1;
    }
    let line = lines.get(next)?;
    let declaration = line.trim_start();
    let declaration = declaration
        .strip_prefix("pub(crate) ")
        .or_else(|| declaration.strip_prefix("pub(super) "))
        .or_else(|| declaration.strip_prefix("pub "))
        .unwrap_or(declaration);
    (declaration.starts_with("mod ") && declaration.trim_end().ends_with('{')).then_some(next)
}

/// The lines the rule counts (see the module documentation).
fn counted_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let mut counted = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if let Some(module) = test_module_at(&lines, index) {
            let indentation =
                &lines[module][..lines[module].len() - lines[module].trim_start().len()];
            let closing = format!("{indentation}}}");
            index = (module + 1..lines.len())
                .find(|line| lines[*line] == closing)
                .map_or(lines.len(), |line| line + 1);
            continue;
        }
        let trimmed = lines[index].trim();
        if !trimmed.is_empty() && !trimmed.starts_with("//") {
            counted.push(lines[index]);
        }
        index += 1;
    }
    counted
}

/// The assertion macros called on one line.
fn assertions_on(line: &str) -> usize {
    let mut count = 0;
    let mut rest = line;
    while let Some(start) =
        rest.find(|character: char| character.is_alphanumeric() || character == '_')
    {
        let word = &rest[start..];
        let length = word
            .find(|character: char| !(character.is_alphanumeric() || character == '_'))
            .unwrap_or(word.len());
        let (name, after) = word.split_at(length);
        if after.starts_with('!') && ASSERTION_MACROS.contains(&name) {
            count += 1;
        }
        rest = after;
    }
    count
}

/// Whether the density counts `relative` (a path under `src/`).
fn is_counted(relative: &Path) -> bool {
    !super::is_test_file(relative) && relative != Path::new("test_support.rs")
}

#[test]
fn assertions_guard_the_boundaries_of_src_and_of_its_task_layer() {
    let mut server = Density::default();
    let mut tasks = Density::default();
    for (relative, text) in super::all_server_sources() {
        if !is_counted(&relative) {
            continue;
        }
        server.add(&text);
        if relative.starts_with("tasks") {
            tasks.add(&text);
        }
    }
    assert!(
        server.lines > 10_000 && tasks.lines > 1_000,
        "the count reads the code: src/ {server}; src/tasks/ {tasks}"
    );
    for (folder, density) in [("src/", server), ("src/tasks/", tasks)] {
        assert!(
            density.meets_the_minimum(),
            "{folder}: {density}, fewer than {ASSERTIONS_PER_THOUSAND_LINES_MIN} per 1,000 \
             lines: assert the invariants of the code you add (ARCHITECTURE.md §10 rule 11)"
        );
    }
}

#[test]
fn the_density_counts_assertion_macros_and_skips_tests_and_comments() {
    let source = "\
//! A module.
use std::fmt;

#[cfg(test)]
mod tests_elsewhere;

/// Adds.
fn add(left: u32, right: u32) -> u32 {
    assert!(left < 10, \"a small left\");
    debug_assert_eq!(left, left); debug_assert_ne!(left, right + 1);
    let _not_a_macro = my_assert!(left) + custom_assert_eq(left);
    // assert!(a comment)

    left + right
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(1, 2), 3);
    }
}
";
    let lines = counted_lines(source);
    assert_eq!(lines.len(), 9, "{lines:#?}");
    let mut density = Density::default();
    density.add(source);
    assert_eq!(density.assertions, 3, "{density}");
    assert!(!is_counted(Path::new("tasks/tests/queue.rs")));
    assert!(!is_counted(Path::new("outgoing/connection_tests.rs")));
    assert!(!is_counted(Path::new("test_support.rs")));
    assert!(is_counted(Path::new("tasks/queue.rs")));
}
