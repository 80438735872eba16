//! A shortcut through charabia for printable ASCII text under the default separators: the
//! same tokens (kinds and lemmas) charabia gives, without its script detection, its
//! separator automaton or its normalizer chain.
//!
//! What charabia does with such a text, and so what this does: the whole text is one Latin
//! group (or one group of no script, which no normalizer touches, when it holds no letter);
//! the default separators cut it leftmost-longest, each match a token of its own; every piece
//! between two separators is one token (the Latin segmenter does not split camelCase in our
//! build); each token is a stop word if the stop words hold it as written (charabia's
//! classifier runs before it lowercases), else a separator (hard when charabia counts it as a
//! context separator) or a word; then the lemma is lowercased. No other normalizer changes
//! printable ASCII.
//!
//! Without a language list, charabia gives Latin text no language (it detects languages only
//! for scripts several of whose languages have their own segmenter, and Latin's rule is to
//! pick none), so its German compound splitter never runs here; the tests hold German text to
//! that.
//!
//! Invariants: [`AsciiTokenizer::tokens`] takes only a text of printable ASCII bytes
//! (`0x20..=0x7E`; tab, newline and the control bytes go through charabia), it is only used
//! with no custom separators, no dictionary and no language list, and then yields exactly charabia's
//! tokens' kinds, lemmas and scripts, in order (the offsets are left at zero: indexing reads
//! none of them, and highlighting goes through charabia); the tables are built from charabia's own separator
//! lists, and if a multi-byte separator could start on a byte that is not a separator itself
//! the shortcut is off (the greedy cut below would no longer be leftmost-longest).

use std::borrow::Cow;
use std::sync::LazyLock;

use charabia::separators::{CONTEXT_SEPARATORS, DEFAULT_SEPARATORS};
use charabia::{Script, SeparatorKind, Token, TokenKind};

/// The printable ASCII bytes the shortcut takes: space to tilde.
const PRINTABLE: std::ops::RangeInclusive<u8> = 0x20..=0x7E;
/// Entries of the per-byte separator table: every ASCII byte.
const ASCII_BYTES: usize = 128;

/// What charabia's default separators make of printable ASCII.
struct SeparatorTable {
    /// For each byte: its kind when the byte alone is a separator.
    single: [Option<SeparatorKind>; ASCII_BYTES],
    /// The separators of two or more printable ASCII bytes (". ", ", "), longest first.
    longer: Vec<(&'static str, SeparatorKind)>,
}

/// The table, or `None` when the shortcut cannot reproduce charabia's cut.
static SEPARATORS: LazyLock<Option<SeparatorTable>> = LazyLock::new(SeparatorTable::build);

fn kind_of(separator: &str) -> SeparatorKind {
    if CONTEXT_SEPARATORS.contains(&separator) {
        SeparatorKind::Hard
    } else {
        SeparatorKind::Soft
    }
}

impl SeparatorTable {
    fn build() -> Option<SeparatorTable> {
        let mut single = [None; ASCII_BYTES];
        let mut longer = Vec::new();
        for &separator in DEFAULT_SEPARATORS {
            if !separator.bytes().all(|byte| PRINTABLE.contains(&byte)) {
                continue;
            }
            match separator.as_bytes() {
                [byte] => single[usize::from(*byte)] = Some(kind_of(separator)),
                _ => longer.push((separator, kind_of(separator))),
            }
        }
        // Greedy cutting at separator bytes is leftmost-longest only if every longer
        // separator starts with a byte that is a separator by itself.
        let starts_on_separators = longer
            .iter()
            .all(|(separator, _)| single[usize::from(separator.as_bytes()[0])].is_some());
        longer.sort_by_key(|(separator, _)| std::cmp::Reverse(separator.len()));
        starts_on_separators.then_some(SeparatorTable { single, longer })
    }

    /// Whether `byte` alone is a separator.
    fn is_separator(&self, byte: u8) -> bool {
        self.single
            .get(usize::from(byte))
            .is_some_and(Option::is_some)
    }

    /// The separator starting at the beginning of `rest`, if any: the longest that matches.
    fn separator_at(&self, rest: &[u8]) -> Option<(usize, SeparatorKind)> {
        let first = usize::from(*rest.first()?);
        let kind = (*self.single.get(first)?)?;
        let longer = self
            .longer
            .iter()
            .find(|(separator, _)| rest.starts_with(separator.as_bytes()));
        Some(match longer {
            Some((separator, kind)) => (separator.len(), *kind),
            None => (1, kind),
        })
    }
}

/// The script charabia gives printable ASCII `text` (Latin when it holds a letter, none
/// otherwise), read in the same pass that checks it; `None` when `text` is not one the
/// shortcut takes (see the module invariants).
fn printable_script(text: &str) -> Option<Script> {
    let mut script = Script::Other;
    for byte in text.bytes() {
        if !PRINTABLE.contains(&byte) {
            return None;
        }
        if byte.is_ascii_alphabetic() {
            script = Script::Latin;
        }
    }
    Some(script)
}

/// The shortcut, with the index's stop words.
pub struct AsciiTokenizer<'a> {
    table: &'static SeparatorTable,
    stop_words: &'a fst::Set<Vec<u8>>,
}

impl<'a> AsciiTokenizer<'a> {
    /// The shortcut under the default separators, or `None` when charabia's separators cannot
    /// be reproduced by it.
    pub fn new(stop_words: &'a fst::Set<Vec<u8>>) -> Option<AsciiTokenizer<'a>> {
        let table = SEPARATORS.as_ref()?;
        Some(AsciiTokenizer { table, stop_words })
    }

    /// charabia's tokens of `text`, or `None` when `text` is not printable ASCII (charabia
    /// then tokenizes it).
    pub fn tokens<'o>(
        &self,
        text: &'o str,
    ) -> Option<impl Iterator<Item = Token<'o>> + use<'o, '_>> {
        let script = printable_script(text)?;
        let mut offset = 0;
        Some(std::iter::from_fn(move || {
            let rest = text
                .as_bytes()
                .get(offset..)
                .filter(|rest| !rest.is_empty())?;
            let start = offset;
            let kind = match self.table.separator_at(rest) {
                Some((length, kind)) => {
                    offset += length;
                    TokenKind::Separator(kind)
                }
                None => {
                    let piece = rest
                        .iter()
                        .position(|&byte| self.table.is_separator(byte))
                        .unwrap_or(rest.len());
                    offset += piece;
                    TokenKind::Word
                }
            };
            let written = &text[start..offset];
            Some(self.token(written, kind, script))
        }))
    }

    /// The token of `written`, cut as `kind`: classified as charabia's classifier does, then
    /// lowercased.
    fn token<'o>(&self, written: &'o str, kind: TokenKind, script: Script) -> Token<'o> {
        let kind = if !self.stop_words.is_empty() && self.stop_words.contains(written) {
            TokenKind::StopWord
        } else {
            kind
        };
        let lemma = if written.bytes().any(|byte| byte.is_ascii_uppercase()) {
            Cow::Owned(written.to_ascii_lowercase())
        } else {
            Cow::Borrowed(written)
        };
        Token {
            kind,
            lemma,
            script,
            ..Token::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use charabia::{Script, Token, TokenKind, TokenizerBuilder};

    use super::{AsciiTokenizer, printable_script};
    use crate::test_random::Random;

    /// Strings drawn per case.
    const CASES: usize = 4_000;
    /// Longest drawn string, in pieces.
    const PIECES_MAX: u64 = 24;

    /// Pieces the strings are made of: words, numbers, every printable separator and
    /// non-separator symbol, the two-byte separators, camelCase and capitals.
    const PIECES: &[&str] = &[
        "word",
        "Word",
        "WORD",
        "camelCase",
        "MongoDB",
        "x",
        "42",
        "3.14",
        "1e10",
        "-7",
        ". ",
        ", ",
        ".",
        ",",
        " ",
        "  ",
        "-",
        "_",
        "'",
        "\"",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "!",
        "?",
        ":",
        ";",
        "/",
        "\\",
        "@",
        "#",
        "%",
        "&",
        "*",
        "+",
        "`",
        "$",
        "<",
        "=",
        ">",
        "^",
        "|",
        "~",
        "the",
        "The",
        "a",
        "and",
        "C++",
        "node.js",
        "e-mail",
        "don't",
        "v1.2.3",
    ];

    fn drawn(random: &mut Random) -> String {
        let pieces = random.below(PIECES_MAX) + 1;
        (0..pieces)
            .map(|_| PIECES[random.below(PIECES.len() as u64) as usize])
            .collect()
    }

    fn kinds_and_lemmas<'o>(
        tokens: impl Iterator<Item = Token<'o>>,
    ) -> Vec<(TokenKind, String, Script)> {
        tokens
            .map(|token| (token.kind, token.lemma().to_owned(), token.script))
            .collect()
    }

    fn assert_same_as_charabia(stop_words: &fst::Set<Vec<u8>>, seed: u64) {
        let mut builder = TokenizerBuilder::new();
        builder.stop_words(stop_words);
        let tokenizer = builder.build();
        let shortcut = AsciiTokenizer::new(stop_words).expect("the default separators allow it");
        let mut random = Random(seed);
        for _ in 0..CASES {
            let text = drawn(&mut random);
            let tokens = shortcut
                .tokens(&text)
                .expect("drawn texts are printable ASCII");
            assert_eq!(
                kinds_and_lemmas(tokens),
                kinds_and_lemmas(tokenizer.tokenize_with_allow_list(&text, None)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn printable_ascii_gives_charabias_tokens() {
        assert_same_as_charabia(&fst::Set::default(), 0x5EED_0001);
    }

    #[test]
    fn stop_words_are_matched_as_written_as_charabia_does() {
        let stop_words = fst::Set::from_iter(["a", "and", "the"]).expect("sorted words");
        assert_same_as_charabia(&stop_words, 0x5EED_0002);
    }

    #[test]
    fn german_and_other_latin_text_is_not_split_into_compounds() {
        let stop_words = fst::Set::default();
        let tokenizer = TokenizerBuilder::<Vec<u8>>::new().into_tokenizer();
        let shortcut = AsciiTokenizer::new(&stop_words).expect("the default separators allow it");
        for text in [
            "Der Dampfschifffahrtskapitan fahrt uber den Mittellandkanal zur Strombrucke",
            "Feuchteschutz insgesamt. Hausaufgaben, Bundesverfassungsgericht!",
            "Le garcon mange une pomme; el nino come manzanas",
        ] {
            assert_eq!(
                kinds_and_lemmas(shortcut.tokens(text).expect("printable ASCII")),
                kinds_and_lemmas(tokenizer.tokenize_with_allow_list(text, None)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn only_printable_ascii_takes_the_shortcut() {
        assert_eq!(printable_script("Hello, world. 42 ~"), Some(Script::Latin));
        assert_eq!(printable_script("42 ~"), Some(Script::Other));
        assert_eq!(printable_script(""), Some(Script::Other));
        assert_eq!(printable_script("tab\there"), None);
        assert_eq!(printable_script("line\nbreak"), None);
        assert_eq!(printable_script("café"), None);
        assert_eq!(printable_script("nul\0byte"), None);
    }
}
