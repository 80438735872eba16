//! The command line of the running program as a shell would take it back, for reports that
//! must say how they were made.
//!
//! Invariant: an argument made only of characters a shell leaves alone is printed as is;
//! any other is single-quoted, with its own single quotes escaped, so pasting the line into
//! a POSIX shell gives the program the same arguments.

/// Characters, besides ASCII letters and digits, that need no quoting.
const PLAIN_PUNCTUATION: &str = "-_./=:,@%+";

/// `argument` quoted when a shell would need it.
pub fn quote_argument(argument: &str) -> String {
    let plain = !argument.is_empty()
        && argument.chars().all(|character| {
            character.is_ascii_alphanumeric() || PLAIN_PUNCTUATION.contains(character)
        });
    if plain {
        argument.to_string()
    } else {
        format!("'{}'", argument.replace('\'', r"'\''"))
    }
}

/// The running program's command line, each argument quoted when needed.
pub fn command_line() -> String {
    std::env::args()
        .map(|argument| quote_argument(&argument))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_arguments_a_shell_would_change_are_quoted() {
        assert_eq!(
            quote_argument("--data-dir=/tmp/a_b.c"),
            "--data-dir=/tmp/a_b.c"
        );
        assert_eq!(quote_argument("two words"), "'two words'");
        assert_eq!(quote_argument("it's"), r"'it'\''s'");
        assert_eq!(quote_argument(""), "''");
    }
}
