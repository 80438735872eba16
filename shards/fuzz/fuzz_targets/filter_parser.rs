//! Fuzz target: the filter parser never panics, and every error and every token it produces can
//! be rendered (positions stay inside their source string).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shards::filter::{Expression, Filter};

fn render_every_token(filter: &Filter, expression: &Expression) {
    let mut attributes = Vec::new();
    expression.attributes(usize::MAX, &mut attributes);
    for token in attributes {
        let _ = filter.located(token, "token");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Filter::parse(text) {
        Ok(Some(filter)) => render_every_token(&filter, filter.expression()),
        Ok(None) => {}
        Err(error) => {
            let _ = error.to_string();
        }
    }
    // The same text as one element of each JSON array form.
    let array = serde_json::json!([text, [text, "a = 1"]]);
    if let Ok(Some(filter)) = Filter::from_json(&array) {
        render_every_token(&filter, filter.expression());
    }
});
