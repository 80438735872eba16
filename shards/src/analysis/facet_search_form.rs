//! The form in which facet search compares facet values with a facet query: charabia's lossy
//! normalization (lowercase, compatibility decomposition, diacritics removed, and the
//! script's and language's own rules — Chinese variants, Japanese kana, Turkish, Swedish...)
//! of the whole string, as one token.
//!
//! The token's script is detected from the text. Its language is the one locale given when
//! exactly one is, detected among the given locales when several are, and left unknown
//! otherwise (no locale: charabia's language-independent rules only), as Meilisearch decides
//! it for facet search.
//!
//! Invariant: a pure function of the text and the locales, so a value's form computed for a
//! field's locales once per commit equals the form computed at query time.

use std::borrow::Cow;

use charabia::normalizer::NormalizerOption;
use charabia::{Language, Normalize, StrDetection, Token};

/// `text` in facet search's comparison form for `locales`.
pub fn facet_search_form(text: &str, locales: Option<&[Language]>) -> String {
    let mut detection = StrDetection::new(text, locales);
    let script = detection.script();
    let language = match locales {
        Some([only]) => Some(*only),
        Some(several) if several.len() > 1 => detection.language(),
        _ => None,
    };
    let token = Token {
        lemma: Cow::Borrowed(text),
        script,
        language,
        ..Default::default()
    };
    let options = NormalizerOption {
        lossy: true,
        ..Default::default()
    };
    token.normalize(&options).lemma.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_drops_case_and_diacritics() {
        assert_eq!(facet_search_form("École", None), "ecole");
        assert_eq!(facet_search_form("ÉCOLE", Some(&[Language::Fra])), "ecole");
        assert_eq!(facet_search_form("İstanbul", None), "istanbul");
    }

    #[test]
    fn one_locale_applies_its_language_rules() {
        // Swedish keeps its own letters; the language-independent rules fold them away.
        assert_eq!(
            facet_search_form("Ålesund", Some(&[Language::Swe])),
            "ålesund"
        );
        assert_eq!(facet_search_form("Ålesund", None), "alesund");
        assert_eq!(facet_search_form("Ålesund", Some(&[])), "alesund");
    }

    #[test]
    fn kana_is_formed_in_hiragana_unless_the_language_is_another() {
        assert_eq!(facet_search_form("カタカナ", None), "かたかな");
        assert_eq!(
            facet_search_form("カタカナ", Some(&[Language::Jpn])),
            "かたかな"
        );
        assert_eq!(
            facet_search_form("カタカナ", Some(&[Language::Cmn])),
            "カタカナ"
        );
    }

    #[test]
    fn chinese_variants_meet_in_one_form_unless_the_language_is_another() {
        let traditional = facet_search_form("東京", Some(&[Language::Cmn]));
        assert_eq!(
            facet_search_form("东京", Some(&[Language::Cmn])),
            traditional
        );
        assert_eq!(facet_search_form("东京", None), traditional);
        assert_eq!(facet_search_form("东京", Some(&[Language::Jpn])), "东京");
    }
}
