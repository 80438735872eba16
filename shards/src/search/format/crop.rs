//! The crop window of one text: the run of `crop` words kept around the best group of matches,
//! as Meilisearch chooses it.
//!
//! The best group: among the runs of consecutive matches spanning fewer than `crop` words, the
//! one with the most distinct query ids, then the smallest total distance between matches
//! (each gap counted up to [`GAP_WORDS_MAX`], each inner gap of a phrase counted as 1), then the
//! most matches in query order; the earliest wins ties. The window then grows from the group
//! towards both ends one word at a time (the left first when both sides are words, towards
//! the word when one side is a separator, towards the soft separator when one is hard) until
//! it holds `crop` words. A phrase longer than the window is cut from its end, and the window
//! then starts at the text's start. Without matches the window is the first `crop` words.
//!
//! Invariant: the bounds are byte offsets on token boundaries, `start <= end <= text length`.

use charabia::{SeparatorKind, Token, TokenKind};

use super::matcher::Match;

/// Largest gap between two matches the distance score counts.
const GAP_WORDS_MAX: usize = 7;

/// Score of a group of matches; greater is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct GroupScore {
    distinct_ids: usize,
    /// Minus the distances between matches.
    closeness: i64,
    ordered: i64,
}

fn group_score(group: &[Match]) -> GroupScore {
    let mut ids: Vec<u32> = Vec::with_capacity(group.len());
    let mut closeness: i64 = 0;
    let mut ordered: i64 = 0;
    for (index, current) in group.iter().enumerate() {
        // A phrase's words are in order and one word apart.
        let inner_gaps = i64::try_from(current.last_word - current.first_word).unwrap_or(i64::MAX);
        ordered += inner_gaps;
        closeness -= inner_gaps;
        if let Some(next) = group.get(index + 1) {
            if next.ids.start() > current.ids.start() {
                ordered += 1;
            }
            let gap = next
                .first_word
                .saturating_sub(current.last_word)
                .min(GAP_WORDS_MAX);
            closeness -= i64::try_from(gap).unwrap_or(i64::MAX);
        }
        ids.extend(current.ids.clone());
    }
    ids.sort_unstable();
    ids.dedup();
    GroupScore {
        distinct_ids: ids.len(),
        closeness,
        ordered,
    }
}

/// Indexes of the first and last match of the best group (`None` without matches).
fn best_group(matches: &[Match], crop: usize) -> Option<(usize, usize)> {
    let first_match = matches.first()?;
    let mut best: Option<((usize, usize), GroupScore)> = None;
    let mut consider = |first: usize, last: usize| {
        // An empty group (two phrases each longer than the window) is never kept.
        if first > last {
            return;
        }
        let score = group_score(&matches[first..=last]);
        if best.is_none_or(|(_, best_score)| score > best_score) {
            best = Some(((first, last), score));
        }
    };
    let mut first = 0;
    let mut first_word = first_match.first_word;
    for (index, next) in matches.iter().enumerate() {
        let last_word = next.last_word;
        if last_word.saturating_sub(first_word) < crop {
            continue;
        }
        if index != 0 {
            consider(first, index - 1);
        }
        loop {
            first += 1;
            if first == matches.len() {
                first -= 1;
                break;
            }
            first_word = matches[first].first_word;
            if first_word > last_word || last_word - first_word < crop {
                break;
            }
        }
    }
    let last = matches.len() - 1;
    if first != last || matches[first].word_count() < crop {
        consider(first, last);
    }
    Some(best.map_or((0, 0), |(group, _)| group))
}

/// What a token is for the window's growth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Word,
    Separator(SeparatorKind),
}

fn side_of(token: &Token<'_>) -> Side {
    match token.kind {
        TokenKind::Separator(kind) => Side::Separator(kind),
        _ => Side::Word,
    }
}

/// A walk over token indexes in one direction.
struct Walk {
    next: Option<usize>,
    forward: bool,
    len: usize,
}

impl Walk {
    fn advance(&mut self) {
        self.next = self.next.and_then(|index| {
            if self.forward {
                (index + 1 < self.len).then_some(index + 1)
            } else {
                index.checked_sub(1)
            }
        });
    }

    fn peek<'a, 't>(&self, tokens: &'a [Token<'t>]) -> Option<&'a Token<'t>> {
        self.next.map(|index| &tokens[index])
    }
}

/// Words still to add, and the walks the window grows along: before the group (leftwards)
/// and after it (rightwards, or leftwards back into a phrase longer than the window).
fn initial_walks(tokens: &[Token<'_>], matches: &[Match], crop: usize) -> (usize, Walk, Walk) {
    let len = tokens.len();
    let exhausted = Walk {
        next: None,
        forward: false,
        len,
    };
    let Some((first, last)) = best_group(matches, crop) else {
        let from_start = Walk {
            next: (len > 0).then_some(0),
            forward: true,
            len,
        };
        return (crop, exhausted, from_start);
    };
    let (first, last) = (&matches[first], &matches[last]);
    let span = last.last_word.saturating_sub(first.first_word) + 1;
    let after_start = (last.last_token + 1).min(len);
    if crop >= span {
        let before = Walk {
            next: first.first_token.checked_sub(1),
            forward: false,
            len,
        };
        let after = Walk {
            next: (after_start < len).then_some(after_start),
            forward: true,
            len,
        };
        (crop - span, before, after)
    } else {
        // One phrase longer than the window: words are taken back from its end.
        let back = Walk {
            next: Some(after_start.min(len.saturating_sub(1))),
            forward: false,
            len,
        };
        (span - crop, exhausted, back)
    }
}

/// Byte bounds `(start, end)` of the crop window of `crop` (> 0) words.
pub fn crop_bounds(
    text_len: usize,
    tokens: &[Token<'_>],
    matches: &[Match],
    crop: usize,
) -> (usize, usize) {
    let (mut remaining, mut before, mut after) = initial_walks(tokens, matches, crop);
    while remaining > 0 {
        let before_side = before.peek(tokens).map(side_of);
        let after_side = after.peek(tokens).map(side_of);
        match (before_side, after_side) {
            (Some(Side::Separator(left)), Some(Side::Separator(right))) => {
                if left == right {
                    before.advance();
                    // Keeps a separator from ending the window before the marker.
                    if remaining > 1 {
                        after.advance();
                    }
                } else if left == SeparatorKind::Hard {
                    after.advance();
                } else {
                    before.advance();
                }
            }
            (Some(Side::Word), Some(Side::Separator(_))) => {
                before.advance();
                remaining -= 1;
            }
            (Some(Side::Separator(_)), Some(Side::Word)) => {
                after.advance();
                remaining -= 1;
            }
            (Some(Side::Word), Some(Side::Word)) => {
                before.advance();
                remaining -= 1;
                if remaining > 0 {
                    after.advance();
                    remaining -= 1;
                }
            }
            (Some(side), None) => {
                before.advance();
                if side == Side::Word {
                    remaining -= 1;
                }
            }
            (None, Some(side)) => {
                after.advance();
                if side == Side::Word {
                    remaining -= 1;
                }
            }
            (None, None) => break,
        }
    }
    let start = before.peek(tokens).map_or(0, |token| token.byte_end);
    let end = after
        .peek(tokens)
        .map_or(text_len, |token| token.byte_start);
    (start, end.max(start))
}
