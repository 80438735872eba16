//! One text's formatted form (crop window, crop markers, highlight tags) and its match bounds
//! for `_matchesPosition`, as Meilisearch renders them.
//!
//! Rules: a crop of 0 words keeps the whole text; the marker is written at a cut end only
//! (never when the window reaches the text's start or end) and never when it is empty; a match
//! is tagged when it touches the window (clipped to it); a prefix match tags only its matched
//! characters, the rest of the word follows the closing tag.
//!
//! Invariant: every slice taken from the text is on a char boundary (token bounds, or char
//! indexes of the text itself).

use charabia::Token;

use super::crop::crop_bounds;
use super::matcher::Match;

/// The tags and marker of one search.
#[derive(Debug, Clone, Copy)]
pub struct Decoration<'a> {
    pub crop_marker: &'a str,
    pub pre_tag: &'a str,
    pub post_tag: &'a str,
}

/// What to do to one text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextFormat {
    pub highlight: bool,
    /// Words kept; `None` or `Some(0)` keeps the whole text.
    pub crop: Option<usize>,
}

impl TextFormat {
    /// Whether the text needs its tokens.
    pub fn needs_tokens(&self) -> bool {
        self.highlight || self.crop.is_some_and(|crop| crop > 0)
    }
}

/// `text` cropped and highlighted.
pub fn render(
    text: &str,
    tokens: &[Token<'_>],
    matches: &[Match],
    format: TextFormat,
    decoration: Decoration<'_>,
) -> String {
    if !format.needs_tokens() {
        return text.to_owned();
    }
    let (start, end) = match format.crop {
        Some(crop) if crop > 0 => crop_bounds(text.len(), tokens, matches, crop),
        _ => (0, text.len()),
    };
    let mut out = String::with_capacity(end - start + decoration.crop_marker.len() * 2);
    if start > 0 {
        out.push_str(decoration.crop_marker);
    }
    let mut written = start;
    if format.highlight {
        for found in matches {
            let match_start = tokens[found.first_token].byte_start;
            let match_end = tokens[found.last_token].byte_end;
            if match_end < start || match_start > end {
                continue;
            }
            let (match_start, match_end) = (match_start.max(start), match_end.min(end));
            if written < match_start {
                out.push_str(&text[written..match_start]);
            }
            let highlight_end = text[match_start..]
                .char_indices()
                .nth(found.char_count)
                .map_or(match_end, |(offset, _)| {
                    (match_start + offset).min(match_end)
                });
            out.push_str(decoration.pre_tag);
            out.push_str(&text[match_start..highlight_end]);
            out.push_str(decoration.post_tag);
            if highlight_end < match_end {
                out.push_str(&text[highlight_end..match_end]);
            }
            written = match_end;
        }
    }
    if written < end {
        out.push_str(&text[written..end]);
    }
    if end < text.len() {
        out.push_str(decoration.crop_marker);
    }
    out
}

/// Byte offset and byte length of a match in the original text.
pub fn match_bounds(tokens: &[Token<'_>], found: &Match) -> (usize, usize) {
    let start = tokens[found.first_token].byte_start;
    let mut length = 0;
    let mut characters = 0;
    for token in &tokens[found.first_token..=found.last_token] {
        match &token.char_map {
            Some(char_map) => {
                for (original_bytes, _) in char_map {
                    if characters == found.char_count {
                        return (start, length);
                    }
                    length += usize::from(*original_bytes);
                    characters += 1;
                }
            }
            None => {
                for character in token.lemma().chars() {
                    if characters == found.char_count {
                        return (start, length);
                    }
                    length += character.len_utf8();
                    characters += 1;
                }
            }
        }
    }
    (start, length)
}
