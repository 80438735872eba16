//! Negotiation of the response coding from `Accept-Encoding`, as actix-web's `Compress`
//! middleware does it (with the `compress-brotli` and `compress-gzip` features Meilisearch
//! enables).
//!
//! Rules reproduced:
//! - supported codings: `br`, `gzip`, `deflate` (zlib-wrapped), and identity; `zstd` is not
//!   offered (Meilisearch's actix build lacks it);
//! - items sort by q-value, then by server rank (br > zstd > gzip > deflate > others); the
//!   first supported item with q > 0 wins; otherwise identity if acceptable, else 406;
//! - an item that does not parse (bad q-value) is ignored; a header that is not visible ASCII
//!   is ignored altogether (identity); `*` alone gives identity.
//!
//! Invariant: the chosen coding is one the request accepts.

/// Body of the 406 answer when no acceptable coding exists, as actix sends it.
pub(crate) const SUPPORTED_ENCODINGS_TEXT: &str = "br, gzip, deflate";
/// Most items of `Accept-Encoding` considered (the rest are ignored).
pub(crate) const ACCEPT_ENCODING_ITEMS_MAX: usize = 32;
/// q-values are compared in thousandths, as actix does.
const QUALITY_MAX: u16 = 1000;

/// A response content coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Identity,
    Brotli,
    Gzip,
    Deflate,
}

impl Encoding {
    /// The `content-encoding` token.
    pub(crate) fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preference {
    Any,
    Identity,
    Supported(Encoding),
    /// Known to actix but not compiled in (zstd), or unknown.
    Other {
        rank: u8,
    },
}

#[derive(Debug, Clone, Copy)]
struct QualityItem {
    preference: Preference,
    quality: u16,
}

impl QualityItem {
    fn rank(&self) -> u8 {
        if self.quality == 0 {
            return 0;
        }
        match self.preference {
            Preference::Supported(Encoding::Brotli) => 5,
            Preference::Supported(Encoding::Gzip) => 3,
            Preference::Supported(Encoding::Deflate) => 2,
            Preference::Other { rank } => rank,
            Preference::Any | Preference::Identity | Preference::Supported(Encoding::Identity) => 0,
        }
    }
}

/// Chooses the response coding from the request's `Accept-Encoding` values (all headers of
/// that name, in order). `None` means no acceptable coding: answer 406.
pub(crate) fn negotiate<'a>(values: impl Iterator<Item = &'a [u8]>) -> Option<Encoding> {
    const UNUSED: QualityItem = QualityItem {
        preference: Preference::Any,
        quality: 0,
    };
    let mut slots = [UNUSED; ACCEPT_ENCODING_ITEMS_MAX];
    let mut count = 0;
    let mut any_header = false;
    for value in values {
        any_header = true;
        let Ok(text) = std::str::from_utf8(value) else {
            return Some(Encoding::Identity);
        };
        if !text
            .bytes()
            .all(|byte| byte == b'\t' || (0x20..0x7f).contains(&byte))
        {
            return Some(Encoding::Identity);
        }
        let parsed = text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .filter_map(parse_item);
        for item in parsed {
            if count < ACCEPT_ENCODING_ITEMS_MAX {
                slots[count] = item;
                count += 1;
            }
        }
    }
    let items = &mut slots[..count];
    if !any_header || items.is_empty() {
        return Some(Encoding::Identity);
    }
    // Stable sort: equal items keep their listed order.
    items.sort_by(|a, b| b.quality.cmp(&a.quality).then(b.rank().cmp(&a.rank())));
    let matched = items
        .iter()
        .filter(|item| item.quality > 0)
        .find_map(|item| match item.preference {
            Preference::Supported(encoding) => Some(encoding),
            _ => None,
        });
    match matched {
        Some(encoding) => Some(encoding),
        None if identity_acceptable(items) => Some(Encoding::Identity),
        None => None,
    }
}

/// `identity` is acceptable unless `identity;q=0`, or `*;q=0` without a better `identity`.
fn identity_acceptable(sorted_items: &[QualityItem]) -> bool {
    for item in sorted_items {
        match item.preference {
            Preference::Identity | Preference::Any => return item.quality > 0,
            _ => {}
        }
    }
    true
}

fn parse_item(item: &str) -> Option<QualityItem> {
    let mut raw_item = item;
    let mut quality = QUALITY_MAX;
    if let Some((value, attribute)) = item.rsplit_once(';') {
        let (value, attribute) = (value.trim(), attribute.trim());
        if attribute.len() < 2 {
            return None;
        }
        if attribute.starts_with("q=") || attribute.starts_with("Q=") {
            quality = parse_quality(&attribute[2..])?;
            raw_item = value;
        }
    }
    Some(QualityItem {
        preference: parse_preference(raw_item.trim()),
        quality,
    })
}

fn parse_quality(text: &str) -> Option<u16> {
    const QUALITY_TEXT_BYTES_MAX: usize = 5;
    if text.len() > QUALITY_TEXT_BYTES_MAX {
        return None;
    }
    let value: f32 = text.parse().ok()?;
    if !(0.0..=1.0).contains(&value) {
        return None;
    }
    // Truncation, not rounding, as actix's `Quality::from_f32`.
    Some((value * f32::from(QUALITY_MAX)) as u16)
}

fn parse_preference(token: &str) -> Preference {
    if token == "*" {
        return Preference::Any;
    }
    let known = [
        ("br", Preference::Supported(Encoding::Brotli)),
        ("gzip", Preference::Supported(Encoding::Gzip)),
        ("deflate", Preference::Supported(Encoding::Deflate)),
        ("identity", Preference::Identity),
        ("zstd", Preference::Other { rank: 4 }),
    ];
    known
        .iter()
        .find(|(name, _)| token.eq_ignore_ascii_case(name))
        .map(|(_, preference)| *preference)
        .unwrap_or(Preference::Other { rank: 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn negotiate_one(value: &str) -> Option<Encoding> {
        negotiate(std::iter::once(value.as_bytes()))
    }

    #[test]
    fn negotiation_prefers_quality_then_server_rank() {
        assert_eq!(negotiate(std::iter::empty()), Some(Encoding::Identity));
        assert_eq!(negotiate_one(""), Some(Encoding::Identity));
        assert_eq!(negotiate_one("gzip, deflate, br"), Some(Encoding::Brotli));
        assert_eq!(negotiate_one("gzip, deflate"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("deflate"), Some(Encoding::Deflate));
        assert_eq!(negotiate_one("br;q=0.5, gzip;q=0.8"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("GZIP"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("zstd"), Some(Encoding::Identity));
        assert_eq!(negotiate_one("zstd, gzip;q=0.1"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("*"), Some(Encoding::Identity));
        assert_eq!(negotiate_one("br;q=0, gzip;q=0"), Some(Encoding::Identity));
    }

    #[test]
    fn negotiation_refuses_when_identity_is_excluded() {
        assert_eq!(negotiate_one("identity;q=0"), None);
        assert_eq!(negotiate_one("*;q=0"), None);
        assert_eq!(negotiate_one("zstd, *;q=0"), None);
        assert_eq!(negotiate_one("gzip, *;q=0"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("identity, *;q=0"), Some(Encoding::Identity));
    }

    #[test]
    fn malformed_items_are_ignored() {
        assert_eq!(negotiate_one("br;q=2, gzip"), Some(Encoding::Gzip));
        assert_eq!(
            negotiate_one("br;q=0.12345, deflate"),
            Some(Encoding::Deflate)
        );
        assert_eq!(negotiate_one("br;x"), Some(Encoding::Identity));
        assert_eq!(negotiate_one("gzip;level=1"), Some(Encoding::Identity));
    }
}
