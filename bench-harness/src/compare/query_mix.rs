//! The query mix: a deterministic list of search request bodies drawn from the dataset's own
//! vocabulary, the same for every server.
//!
//! Query `i` has the kind at position `i % KIND_WEIGHT_TOTAL` of the weighted kind schedule
//! (`KIND_WEIGHTS`), so the shares of kinds are exact for every multiple of the total weight;
//! its words come from a SplitMix64 generator seeded with `seed`. Invariants: the same
//! documents, count and seed always give the same mix; every body is a JSON object with a
//! string `q` and `limit = TOP_HITS_COUNT`; a typo query's word is one substitution or one
//! deletion (never of the first character) away from a vocabulary word of at least
//! `TYPO_WORD_CHARS_MIN` characters; a phrase query quotes two words that follow each other,
//! separated by exactly one space, in some document's summary; a prefix query's last word is
//! a strict prefix, of at least `PREFIX_CHARS_MIN` characters, of a vocabulary word.

use serde_json::{Value, json};

use super::vocabulary::{BANDS, DocumentText, Vocabulary, is_query_word, tokenize};
use crate::load::picker::SplitMix64;

/// Hits asked of each query (and compared between servers).
pub const TOP_HITS_COUNT: usize = 10;
/// Fewest characters of a word given a typo (Meilisearch's default for one typo).
pub const TYPO_WORD_CHARS_MIN: usize = 5;
/// Fewest characters of a word cut into a prefix (the cut keeps at least one character off).
pub const PREFIX_SOURCE_CHARS_MIN: usize = 4;
/// Fewest characters kept by a prefix cut.
pub const PREFIX_CHARS_MIN: usize = 2;
/// Random draws tried before a generator falls back to a simpler choice.
pub const ATTEMPTS_MAX: usize = 64;
/// The filter of `FilterGreater` queries.
pub const FILTER_GREATER: &str = "year > 2020";
/// The filter of `FilterEqual` queries.
pub const FILTER_EQUAL: &str = "year = 2019";
/// The sort of `Sort` queries.
pub const SORT_YEAR_DESCENDING: &str = "year:desc";
/// The facet asked by `Facets` queries.
pub const FACET_ATTRIBUTE: &str = "year";
/// The sort of `SortRare` queries: a sortable attribute only some documents hold.
pub const SORT_RANK_ASCENDING: &str = "rank:asc";
/// A sortable attribute no document of the dataset holds (declared sortable by the
/// comparison's settings).
pub const ABSENT_ATTRIBUTE: &str = "stars";
/// The sort of `SortAbsent` queries.
pub const SORT_ABSENT_DESCENDING: &str = "stars:desc";

/// What a query exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueryKind {
    /// One word of a frequency band.
    OneWord,
    /// Two words of one document, in their order there.
    TwoWords,
    /// One or two words, the last cut short.
    Prefix,
    /// One word with one typo.
    Typo,
    /// Two words adjacent in a summary, in quotes.
    Phrase,
    /// One word and `FILTER_GREATER`.
    FilterGreater,
    /// One word and `FILTER_EQUAL`.
    FilterEqual,
    /// One word sorted by `SORT_YEAR_DESCENDING`.
    Sort,
    /// One word with the facet distribution of `FACET_ATTRIBUTE`.
    Facets,
    /// An empty query with a filter.
    PlaceholderFilter,
    /// Two words of one document and `FILTER_GREATER`.
    TwoWordsFilter,
    /// One or two words sorted by `SORT_RANK_ASCENDING` (few documents hold `rank`).
    SortRare,
    /// One or two words sorted by `SORT_ABSENT_DESCENDING` (no document holds it).
    SortAbsent,
}

/// The kinds and their relative frequencies in the mix.
pub const KIND_WEIGHTS: [(QueryKind, u32); 13] = [
    (QueryKind::OneWord, 3),
    (QueryKind::TwoWords, 3),
    (QueryKind::Prefix, 3),
    (QueryKind::Typo, 2),
    (QueryKind::Phrase, 2),
    (QueryKind::FilterGreater, 1),
    (QueryKind::FilterEqual, 1),
    (QueryKind::Sort, 2),
    (QueryKind::Facets, 2),
    (QueryKind::PlaceholderFilter, 1),
    (QueryKind::TwoWordsFilter, 2),
    (QueryKind::SortRare, 1),
    (QueryKind::SortAbsent, 2),
];

/// The sum of `KIND_WEIGHTS`.
pub const KIND_WEIGHT_TOTAL: u32 = 25;

impl QueryKind {
    /// The kind's name in reports.
    pub fn label(self) -> &'static str {
        match self {
            QueryKind::OneWord => "one_word",
            QueryKind::TwoWords => "two_words",
            QueryKind::Prefix => "prefix",
            QueryKind::Typo => "typo",
            QueryKind::Phrase => "phrase",
            QueryKind::FilterGreater => "filter_year_gt",
            QueryKind::FilterEqual => "filter_year_eq",
            QueryKind::Sort => "sort_year_desc",
            QueryKind::Facets => "facets_year",
            QueryKind::PlaceholderFilter => "placeholder_filter",
            QueryKind::TwoWordsFilter => "two_words_filter",
            QueryKind::SortRare => "sort_rank_asc",
            QueryKind::SortAbsent => "sort_absent",
        }
    }

    /// The kind of query number `index` in the schedule.
    pub fn of_index(index: usize) -> QueryKind {
        let mut position = (index % KIND_WEIGHT_TOTAL as usize) as u32;
        for (kind, weight) in KIND_WEIGHTS {
            if position < weight {
                return kind;
            }
            position -= weight;
        }
        unreachable!("KIND_WEIGHT_TOTAL is the sum of KIND_WEIGHTS")
    }
}

/// One query of the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// What it exercises.
    pub kind: QueryKind,
    /// The body of `POST /indexes/{uid}/search`.
    pub body: Value,
}

/// Writes `queries` to `path` as NDJSON, one `{"kind", "body"}` object a line, so a run's mix
/// can be read back.
pub fn write_mix(path: &std::path::Path, queries: &[Query]) -> Result<(), String> {
    let text: String = queries
        .iter()
        .map(|query| {
            format!(
                "{}\n",
                json!({"kind": query.kind.label(), "body": query.body})
            )
        })
        .collect();
    std::fs::write(path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
}

/// `count` queries drawn from `documents` and their `vocabulary` with `seed`. Empty when the
/// vocabulary is empty (nothing can be searched for).
pub fn generate(
    vocabulary: &Vocabulary,
    documents: &[DocumentText],
    count: usize,
    seed: u64,
) -> Vec<Query> {
    if vocabulary.is_empty() || documents.is_empty() {
        return Vec::new();
    }
    let mut generator = Generator {
        vocabulary,
        documents,
        random: SplitMix64::new(seed),
    };
    (0..count)
        .map(|index| generator.query(QueryKind::of_index(index)))
        .collect()
}

/// `count` queries drawn with `seed` from the documents of the dataset `lines` (the lines
/// that are not JSON objects give no words); fails when no query can be made.
pub fn generate_from_lines(
    lines: &[String],
    count: usize,
    seed: u64,
) -> Result<Vec<Query>, String> {
    let texts: Vec<DocumentText> = lines
        .iter()
        .filter_map(|line| DocumentText::parse(line))
        .collect();
    let queries = generate(&Vocabulary::build(&texts), &texts, count, seed);
    if queries.is_empty() {
        return Err("the documents have no searchable words: no query can be made".to_string());
    }
    Ok(queries)
}

/// The state of one generation.
struct Generator<'data> {
    vocabulary: &'data Vocabulary,
    documents: &'data [DocumentText],
    random: SplitMix64,
}

impl Generator<'_> {
    /// A uniform draw in `0..bound` (`bound > 0`).
    fn below(&mut self, bound: usize) -> usize {
        (self.random.next_u64() % bound as u64) as usize
    }

    fn coin(&mut self) -> bool {
        self.random.next_u64() & 1 == 1
    }

    fn query(&mut self, kind: QueryKind) -> Query {
        let body = match kind {
            QueryKind::OneWord => search(&self.band_word()),
            QueryKind::TwoWords => search(&self.two_words()),
            QueryKind::Prefix => search(&self.prefix()),
            QueryKind::Typo => search(&self.typo()),
            QueryKind::Phrase => search(&self.phrase()),
            QueryKind::FilterGreater => with(search(&self.band_word()), "filter", FILTER_GREATER),
            QueryKind::FilterEqual => with(search(&self.band_word()), "filter", FILTER_EQUAL),
            QueryKind::Sort => with(
                search(&self.band_word()),
                "sort",
                json!([SORT_YEAR_DESCENDING]),
            ),
            QueryKind::Facets => with(
                search(&self.band_word()),
                "facets",
                json!([FACET_ATTRIBUTE]),
            ),
            QueryKind::PlaceholderFilter => {
                let filter = if self.coin() {
                    FILTER_GREATER
                } else {
                    FILTER_EQUAL
                };
                with(search(""), "filter", filter)
            }
            QueryKind::TwoWordsFilter => with(search(&self.two_words()), "filter", FILTER_GREATER),
            QueryKind::SortRare => {
                let q = self.one_or_two_words();
                with(search(&q), "sort", json!([SORT_RANK_ASCENDING]))
            }
            QueryKind::SortAbsent => {
                let q = self.one_or_two_words();
                with(search(&q), "sort", json!([SORT_ABSENT_DESCENDING]))
            }
        };
        Query { kind, body }
    }

    /// A word of a random band, uniform within the band.
    fn band_word(&mut self) -> String {
        let band = BANDS[self.below(BANDS.len())];
        let words = self.vocabulary.band(band);
        words[self.below(words.len())].0.clone()
    }

    /// A band word of at least `chars_min` characters; the most frequent such word after
    /// `ATTEMPTS_MAX` misses, and any word when none is long enough.
    fn long_band_word(&mut self, chars_min: usize) -> String {
        for _ in 0..ATTEMPTS_MAX {
            let word = self.band_word();
            if word.chars().count() >= chars_min {
                return word;
            }
        }
        self.vocabulary
            .words
            .iter()
            .find(|(word, _)| word.chars().count() >= chars_min)
            .map_or_else(
                || self.vocabulary.words[0].0.clone(),
                |(word, _)| word.clone(),
            )
    }

    /// The distinct query words of a random document, in order of first appearance.
    fn document_words(&mut self) -> Vec<String> {
        let document = &self.documents[self.below(self.documents.len())];
        let mut words: Vec<String> = Vec::new();
        for word in document.tokens() {
            if is_query_word(&word) && !words.contains(&word) {
                words.push(word);
            }
        }
        words
    }

    /// Two distinct words of one document in their order there (two band words when no
    /// document with two words is found).
    fn two_words(&mut self) -> String {
        for _ in 0..ATTEMPTS_MAX {
            let words = self.document_words();
            if words.len() >= 2 {
                let first = self.below(words.len() - 1);
                let second = first + 1 + self.below(words.len() - first - 1);
                return format!("{} {}", words[first], words[second]);
            }
        }
        format!("{} {}", self.band_word(), self.band_word())
    }

    /// A band word or two words of one document, evenly.
    fn one_or_two_words(&mut self) -> String {
        if self.coin() {
            self.band_word()
        } else {
            self.two_words()
        }
    }

    /// One or two words, the last cut to a strict prefix.
    fn prefix(&mut self) -> String {
        let lead = if self.coin() {
            let words = self.document_words();
            words.first().cloned()
        } else {
            None
        };
        let word = self.long_band_word(PREFIX_SOURCE_CHARS_MIN);
        let characters: Vec<char> = word.chars().collect();
        let cut = if characters.len() > PREFIX_CHARS_MIN {
            PREFIX_CHARS_MIN + self.below(characters.len() - PREFIX_CHARS_MIN)
        } else {
            characters.len()
        };
        let prefix: String = characters[..cut].iter().collect();
        match lead {
            Some(lead) if lead != word => format!("{lead} {prefix}"),
            _ => prefix,
        }
    }

    /// A long word with one substitution or deletion after its first character.
    fn typo(&mut self) -> String {
        let word = self.long_band_word(TYPO_WORD_CHARS_MIN);
        let mut characters: Vec<char> = word.chars().collect();
        if characters.len() < 2 {
            return word;
        }
        let position = 1 + self.below(characters.len() - 1);
        if self.coin() {
            characters.remove(position);
        } else {
            let original = characters[position];
            let mut replacement = char::from(b'a' + self.below(26) as u8);
            if replacement == original {
                replacement = if original == 'z' { 'a' } else { 'z' };
            }
            characters[position] = replacement;
        }
        characters.into_iter().collect()
    }

    /// Two words adjacent in a summary, separated there by exactly one space, in quotes.
    fn phrase(&mut self) -> String {
        for _ in 0..ATTEMPTS_MAX {
            let document = &self.documents[self.below(self.documents.len())];
            let Some(summary) = &document.summary else {
                continue;
            };
            let tokens = tokenize(summary);
            let pairs: Vec<(&str, &str)> = tokens
                .windows(2)
                .filter(|pair| {
                    &summary[pair[0].span.end..pair[1].span.start] == " "
                        && is_query_word(&pair[0].word)
                        && is_query_word(&pair[1].word)
                })
                .map(|pair| (pair[0].word.as_str(), pair[1].word.as_str()))
                .collect();
            if !pairs.is_empty() {
                let (first, second) = pairs[self.below(pairs.len())];
                return format!("\"{first} {second}\"");
            }
        }
        format!("\"{}\"", self.two_words())
    }
}

/// A search body for `q`.
fn search(q: &str) -> Value {
    json!({ "q": q, "limit": TOP_HITS_COUNT })
}

/// `body` with one more parameter.
fn with(mut body: Value, name: &str, value: impl Into<Value>) -> Value {
    body[name] = value.into();
    body
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The seed of the synthetic corpus and of the mixes.
    const SEED: u64 = 0x005E_A2C4;

    /// A small corpus with repeated words, so every band has members.
    fn corpus() -> Vec<DocumentText> {
        let words = [
            "python",
            "library",
            "client",
            "django",
            "async",
            "parser",
            "toolkit",
            "quantum",
            "memory",
            "agents",
            "markdown",
            "logging",
            "runner",
            "automation",
            "tensor",
        ];
        let mut random = SplitMix64::new(SEED);
        let mut pick = || words[(random.next_u64() % words.len() as u64) as usize];
        (0..300)
            .map(|index| DocumentText {
                name: Some(format!("{}-{}", pick(), pick())),
                summary: (index % 7 != 0)
                    .then(|| format!("A {} for {}, with {} {}.", pick(), pick(), pick(), pick())),
            })
            .collect()
    }

    fn mix(seed: u64) -> (Vocabulary, Vec<DocumentText>, Vec<Query>) {
        let documents = corpus();
        let vocabulary = Vocabulary::build(&documents);
        let queries = generate(&vocabulary, &documents, 400, seed);
        (vocabulary, documents, queries)
    }

    fn q(query: &Query) -> &str {
        query.body["q"].as_str().expect("as_str succeeds")
    }

    #[test]
    fn the_same_seed_gives_the_same_mix_and_another_seed_another() {
        println!("seed {SEED}");
        let (_, _, first) = mix(SEED);
        let (_, _, again) = mix(SEED);
        let (_, _, other) = mix(SEED + 1);
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert_eq!(first.len(), 400);
    }

    #[test]
    fn kinds_follow_the_weights_exactly() {
        let total: u32 = KIND_WEIGHTS.iter().map(|(_, weight)| weight).sum();
        assert_eq!(total, KIND_WEIGHT_TOTAL);
        let (_, _, queries) = mix(SEED);
        for (kind, weight) in KIND_WEIGHTS {
            let count = queries.iter().filter(|query| query.kind == kind).count();
            assert_eq!(count as u32, weight * 400 / KIND_WEIGHT_TOTAL, "{kind:?}");
        }
    }

    #[test]
    fn every_body_has_a_query_and_the_compared_limit_and_its_kind_parameters() {
        let (_, _, queries) = mix(SEED);
        for query in &queries {
            assert_eq!(query.body["limit"], TOP_HITS_COUNT, "{query:?}");
            let empty = q(query).is_empty();
            assert_eq!(
                empty,
                query.kind == QueryKind::PlaceholderFilter,
                "{query:?}"
            );
            let filter = query.body.get("filter").and_then(Value::as_str);
            match query.kind {
                QueryKind::FilterGreater | QueryKind::TwoWordsFilter => {
                    assert_eq!(filter, Some(FILTER_GREATER))
                }
                QueryKind::FilterEqual => assert_eq!(filter, Some(FILTER_EQUAL)),
                QueryKind::PlaceholderFilter => {
                    assert!([Some(FILTER_GREATER), Some(FILTER_EQUAL)].contains(&filter));
                }
                _ => assert_eq!(filter, None, "{query:?}"),
            }
            assert_eq!(
                query.body.get("sort").is_some(),
                matches!(
                    query.kind,
                    QueryKind::Sort | QueryKind::SortRare | QueryKind::SortAbsent
                )
            );
            assert_eq!(
                query.body.get("facets").is_some(),
                query.kind == QueryKind::Facets
            );
        }
    }

    /// Whether `typo` is `word` with one substitution or deletion after the first character.
    fn is_one_late_edit(word: &str, typo: &str) -> bool {
        let word: Vec<char> = word.chars().collect();
        let typo: Vec<char> = typo.chars().collect();
        if word.first() != typo.first() {
            return false;
        }
        if word.len() == typo.len() {
            word.iter().zip(&typo).filter(|(a, b)| a != b).count() == 1
        } else if word.len() == typo.len() + 1 {
            (1..word.len()).any(|position| {
                let mut shorter = word.clone();
                shorter.remove(position);
                shorter == typo
            })
        } else {
            false
        }
    }

    #[test]
    fn typos_are_one_late_edit_from_a_long_vocabulary_word() {
        let (vocabulary, _, queries) = mix(SEED);
        let typos: Vec<&Query> = queries
            .iter()
            .filter(|query| query.kind == QueryKind::Typo)
            .collect();
        assert!(!typos.is_empty());
        for query in typos {
            let typo = q(query);
            assert!(
                vocabulary
                    .words
                    .iter()
                    .any(|(word, _)| word.chars().count() >= TYPO_WORD_CHARS_MIN
                        && is_one_late_edit(word, typo)),
                "{typo}"
            );
        }
    }

    #[test]
    fn phrases_are_adjacent_words_of_some_summary() {
        let (_, documents, queries) = mix(SEED);
        for query in queries
            .iter()
            .filter(|query| query.kind == QueryKind::Phrase)
        {
            let text = q(query);
            let inner = text
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .expect("the call succeeds");
            assert_eq!(inner.split(' ').count(), 2, "{text}");
            assert!(
                documents.iter().any(|document| document
                    .summary
                    .as_ref()
                    .is_some_and(|summary| summary.to_lowercase().contains(inner))),
                "{text}"
            );
        }
    }

    #[test]
    fn prefixes_cut_a_vocabulary_word_strictly() {
        let (vocabulary, _, queries) = mix(SEED);
        for query in queries
            .iter()
            .filter(|query| query.kind == QueryKind::Prefix)
        {
            let last = q(query).rsplit(' ').next().expect("next finds a value");
            assert!(last.chars().count() >= PREFIX_CHARS_MIN, "{last}");
            assert!(
                vocabulary
                    .words
                    .iter()
                    .any(|(word, _)| word.starts_with(last) && word.len() > last.len()),
                "{last}"
            );
        }
    }

    #[test]
    fn two_word_queries_come_from_one_document_in_order() {
        let (_, documents, queries) = mix(SEED);
        for query in queries
            .iter()
            .filter(|query| query.kind == QueryKind::TwoWords)
        {
            let words: Vec<&str> = q(query).split(' ').collect();
            assert_eq!(words.len(), 2);
            assert!(
                documents.iter().any(|document| {
                    let tokens = document.tokens();
                    let first = tokens.iter().position(|token| token == words[0]);
                    let second = tokens.iter().rposition(|token| token == words[1]);
                    matches!((first, second), (Some(first), Some(second)) if first < second)
                }),
                "{words:?}"
            );
        }
    }

    #[test]
    fn an_empty_dataset_gives_no_queries() {
        assert!(generate(&Vocabulary { words: Vec::new() }, &[], 10, SEED).is_empty());
    }
}
