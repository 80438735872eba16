//! The dashboard served at `GET /` in development, where Meilisearch serves its
//! mini-dashboard: one self-contained page (an index picker with document counts, search as
//! you type with highlights, facets and a filter box, the API key prompt), written in
//! `page.html`, `style.css` and `script.js` beside this file and compiled into the binary.
//!
//! Invariants:
//! - the page loads nothing but itself: its style and script are inlined into `page.html`
//!   at the two slots it holds, and it calls only this server's own API;
//! - its `Content-Security-Policy` allows exactly that: the inlined style and script by
//!   their SHA-256, `fetch` to the page's own origin, and nothing else, so a document that
//!   smuggled markup into a hit could not run a script even if the page ever rendered it.

use std::sync::LazyLock;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The page, with a slot for the style and one for the script.
const TEMPLATE: &str = include_str!("page.html");
/// The page's style, inlined at [`STYLE_SLOT`].
const STYLE: &str = include_str!("style.css");
/// The page's script, inlined at [`SCRIPT_SLOT`].
const SCRIPT: &str = include_str!("script.js");
/// Where `page.html` takes the style.
const STYLE_SLOT: &str = "/* style.css */";
/// Where `page.html` takes the script.
const SCRIPT_SLOT: &str = "/* script.js */";

/// The assembled page and the policy that lets it run.
pub struct Dashboard {
    /// The page's HTML, style and script inlined.
    pub html: String,
    /// The `Content-Security-Policy` header value for it.
    pub content_security_policy: String,
}

/// The dashboard, assembled once per process on first use.
pub static DASHBOARD: LazyLock<Dashboard> = LazyLock::new(assemble);

/// Inlines the style and the script into the page and derives the policy from their hashes.
fn assemble() -> Dashboard {
    let html = TEMPLATE
        .replacen(STYLE_SLOT, STYLE, 1)
        .replacen(SCRIPT_SLOT, SCRIPT, 1);
    let content_security_policy = format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; connect-src 'self'; \
         img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        source_hash(SCRIPT),
        source_hash(STYLE),
    );
    Dashboard {
        html,
        content_security_policy,
    }
}

/// A CSP hash source (`sha256-<base64>`) of an inline element's whole text.
fn source_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_holds_each_slot_once_and_the_page_none() {
        assert_eq!(TEMPLATE.matches(STYLE_SLOT).count(), 1);
        assert_eq!(TEMPLATE.matches(SCRIPT_SLOT).count(), 1);
        let page = &DASHBOARD.html;
        assert!(!page.contains(STYLE_SLOT) && !page.contains(SCRIPT_SLOT));
        assert!(page.contains(&format!("<style>{STYLE}</style>")));
        assert!(page.contains(&format!("<script>{SCRIPT}</script>")));
    }

    #[test]
    fn inlined_sources_cannot_close_their_element_early() {
        assert!(!STYLE.to_ascii_lowercase().contains("</style"));
        assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
    }

    #[test]
    fn the_policy_names_the_hash_of_the_inlined_script_and_style() {
        let policy = &DASHBOARD.content_security_policy;
        assert!(policy.contains(&format!("script-src '{}'", source_hash(SCRIPT))));
        assert!(policy.contains(&format!("style-src '{}'", source_hash(STYLE))));
        assert!(policy.starts_with("default-src 'none';"));
        // The known SHA-256 of the empty string, so the encoding is the one browsers expect.
        assert_eq!(
            source_hash(""),
            "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
    }
}
