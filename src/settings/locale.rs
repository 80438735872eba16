//! Locales of `localizedAttributes`: ISO-639-1 or ISO-639-3 codes (plus `cmn`), kept as
//! given for task details and shown as their ISO-639-3 form on read.
//!
//! Invariant: a [`Locale`] always holds a code of [`LOCALE_CODES`] or `cmn`.

use deserr::{DeserializeError, Deserr, ErrorKind, ValuePointerRef};
use serde::{Deserialize, Serialize};

/// (ISO-639-1, ISO-639-3) pairs in Meilisearch's declaration order.
pub const LOCALE_CODES: [(&str, &str); 70] = [
    ("af", "afr"),
    ("ak", "aka"),
    ("am", "amh"),
    ("ar", "ara"),
    ("az", "aze"),
    ("be", "bel"),
    ("bn", "ben"),
    ("bg", "bul"),
    ("ca", "cat"),
    ("cs", "ces"),
    ("da", "dan"),
    ("de", "deu"),
    ("el", "ell"),
    ("en", "eng"),
    ("eo", "epo"),
    ("et", "est"),
    ("fi", "fin"),
    ("fr", "fra"),
    ("gu", "guj"),
    ("he", "heb"),
    ("hi", "hin"),
    ("hr", "hrv"),
    ("hu", "hun"),
    ("hy", "hye"),
    ("id", "ind"),
    ("it", "ita"),
    ("jv", "jav"),
    ("ja", "jpn"),
    ("kn", "kan"),
    ("ka", "kat"),
    ("km", "khm"),
    ("ko", "kor"),
    ("la", "lat"),
    ("lv", "lav"),
    ("lt", "lit"),
    ("ml", "mal"),
    ("mr", "mar"),
    ("mk", "mkd"),
    ("my", "mya"),
    ("ne", "nep"),
    ("nl", "nld"),
    ("nb", "nob"),
    ("or", "ori"),
    ("pa", "pan"),
    ("fa", "pes"),
    ("pl", "pol"),
    ("pt", "por"),
    ("ro", "ron"),
    ("ru", "rus"),
    ("si", "sin"),
    ("sk", "slk"),
    ("sl", "slv"),
    ("sn", "sna"),
    ("es", "spa"),
    ("sr", "srp"),
    ("sv", "swe"),
    ("ta", "tam"),
    ("te", "tel"),
    ("tl", "tgl"),
    ("th", "tha"),
    ("tk", "tuk"),
    ("tr", "tur"),
    ("uk", "ukr"),
    ("ur", "urd"),
    ("uz", "uzb"),
    ("vi", "vie"),
    ("yi", "yid"),
    ("zh", "zho"),
    ("zu", "zul"),
    ("cmn", "cmn"),
];

/// Number of real language pairs in [`LOCALE_CODES`] (the last entry is `cmn` alone).
const LANGUAGE_PAIRS: usize = LOCALE_CODES.len() - 1;

/// One accepted locale code, as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Locale {
    index: usize,
    is_short: bool,
}

impl Locale {
    /// The locale named `code`, if accepted.
    pub fn parse(code: &str) -> Option<Locale> {
        LOCALE_CODES
            .iter()
            .enumerate()
            .find_map(|(index, (short, long))| {
                if *short == code && index < LANGUAGE_PAIRS {
                    Some(Locale {
                        index,
                        is_short: true,
                    })
                } else if *long == code {
                    Some(Locale {
                        index,
                        is_short: false,
                    })
                } else {
                    None
                }
            })
    }

    /// The code as the request gave it.
    pub fn as_given(self) -> &'static str {
        let (short, long) = LOCALE_CODES[self.index];
        if self.is_short { short } else { long }
    }

    /// The ISO-639-3 form Meilisearch returns on read.
    pub fn canonical(self) -> &'static str {
        LOCALE_CODES[self.index].1
    }

    /// The message of a query-string locale that is not accepted: every accepted code,
    /// shortest first, alphabetically within a length.
    pub fn unsupported_message(code: &str) -> String {
        let mut accepted = Locale::accepted();
        accepted.sort_by(|left, right| left.len().cmp(&right.len()).then(left.cmp(right)));
        format!(
            "Unsupported locale `{code}`, expected one of {}",
            accepted.join(", ")
        )
    }

    /// Every accepted code in Meilisearch's order: all short codes, all long ones, `cmn`.
    fn accepted() -> Vec<&'static str> {
        let pairs = &LOCALE_CODES[..LANGUAGE_PAIRS];
        let mut codes: Vec<&str> = pairs.iter().map(|(short, _)| *short).collect();
        codes.extend(pairs.iter().map(|(_, long)| *long));
        codes.push("cmn");
        codes
    }
}

impl From<Locale> for String {
    fn from(locale: Locale) -> String {
        locale.as_given().to_owned()
    }
}

impl TryFrom<String> for Locale {
    type Error = String;

    fn try_from(code: String) -> Result<Self, Self::Error> {
        Locale::parse(&code).ok_or_else(|| format!("unknown locale `{code}`"))
    }
}

impl<E: DeserializeError> Deserr<E> for Locale {
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        let text = <String as Deserr<E>>::deserialize_from_value(value, location)?;
        Locale::parse(&text).ok_or_else(|| {
            let accepted = Locale::accepted();
            let kind: ErrorKind<'_, V> = ErrorKind::UnknownValue {
                value: &text,
                accepted: &accepted,
            };
            deserr::take_cf_content(E::error(None, kind, location))
        })
    }
}
