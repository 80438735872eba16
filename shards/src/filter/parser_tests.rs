//! Behaviour examples of the parser: accepted filters with the tree they give, and rejected
//! filters with Meilisearch's exact message.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use super::{Condition, Expression, Filter, FilterErrorKind, Token, VectorFilter};

fn token(token: &Token) -> String {
    format!("{{{}}}", token.value)
}

/// A compact rendering of a tree: `{attribute} = {value}`, `AND[a, b, ]`, `NOT (a)`.
fn show(expression: &Expression) -> String {
    match expression {
        Expression::Not(inner) => format!("NOT ({})", show(inner)),
        Expression::Condition {
            attribute,
            condition,
        } => {
            let operand = match condition {
                Condition::GreaterThan(value) => format!("> {}", token(value)),
                Condition::GreaterThanOrEqual(value) => format!(">= {}", token(value)),
                Condition::Equal(value) => format!("= {}", token(value)),
                Condition::NotEqual(value) => format!("!= {}", token(value)),
                Condition::Null => "IS NULL".to_owned(),
                Condition::Empty => "IS EMPTY".to_owned(),
                Condition::Exists => "EXISTS".to_owned(),
                Condition::LowerThan(value) => format!("< {}", token(value)),
                Condition::LowerThanOrEqual(value) => format!("<= {}", token(value)),
                Condition::Between { from, to } => format!("{} TO {}", token(from), token(to)),
                Condition::Contains { word, .. } => format!("CONTAINS {}", token(word)),
                Condition::StartsWith { word, .. } => format!("STARTS WITH {}", token(word)),
            };
            format!("{} {operand}", token(attribute))
        }
        Expression::In { attribute, values } => {
            let values: String = values
                .iter()
                .map(|value| format!("{}, ", token(value)))
                .collect();
            format!("{} IN[{values}]", token(attribute))
        }
        Expression::Or(children) => {
            format!(
                "OR[{}]",
                children
                    .iter()
                    .map(|c| format!("{}, ", show(c)))
                    .collect::<String>()
            )
        }
        Expression::And(children) => {
            format!(
                "AND[{}]",
                children
                    .iter()
                    .map(|c| format!("{}, ", show(c)))
                    .collect::<String>()
            )
        }
        Expression::VectorExists {
            embedder, filter, ..
        } => {
            let mut text = "_vectors".to_owned();
            if let Some(embedder) = embedder {
                text.push_str(&format!(".{:?}", embedder.value));
            }
            match filter {
                VectorFilter::Fragment(fragment) => {
                    text.push_str(&format!(".fragments.{:?}", fragment.value))
                }
                VectorFilter::DocumentTemplate => text.push_str(".documentTemplate"),
                VectorFilter::UserProvided => text.push_str(".userProvided"),
                VectorFilter::Regenerate => text.push_str(".regenerate"),
                VectorFilter::None => {}
            }
            format!("{text} EXISTS")
        }
        Expression::GeoRadius {
            latitude,
            longitude,
            radius,
            resolution,
        } => match resolution {
            None => format!(
                "_geoRadius({}, {}, {})",
                token(latitude),
                token(longitude),
                token(radius)
            ),
            Some(resolution) => format!(
                "_geoRadius({}, {}, {}, {})",
                token(latitude),
                token(longitude),
                token(radius),
                token(resolution)
            ),
        },
        Expression::GeoBoundingBox {
            top_right,
            bottom_left,
        } => format!(
            "_geoBoundingBox([{}, {}], [{}, {}])",
            token(&top_right[0]),
            token(&top_right[1]),
            token(&bottom_left[0]),
            token(&bottom_left[1])
        ),
        Expression::GeoPolygon { points } => {
            let points: String = points
                .iter()
                .map(|[latitude, longitude]| {
                    format!("[{}, {}], ", token(latitude), token(longitude))
                })
                .collect();
            format!("_geoPolygon([{points}])")
        }
    }
}

#[track_caller]
fn parsed(text: &str) -> String {
    match Filter::parse(text) {
        Ok(Some(filter)) => show(filter.expression()),
        Ok(None) => panic!("{text:?} parsed to no filter"),
        Err(error) => panic!("{text:?} was rejected: {error}"),
    }
}

#[track_caller]
fn rejected(text: &str) -> String {
    match Filter::parse(text) {
        Ok(filter) => panic!("{text:?} was accepted: {filter:?}"),
        Err(error) => {
            assert_eq!(error.kind, FilterErrorKind::InvalidFilter);
            error.message
        }
    }
}

const OPERATIONS: &str = "`=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY`, `CONTAINS`, `NOT CONTAINS`, `STARTS WITH`, `NOT STARTS WITH`, `_geoRadius`, `_geoBoundingBox` or `_geoPolygon`";

fn expecting_operation_at(found: &str, marker: &str) -> String {
    format!("Was expecting an operation {OPERATIONS} at `{found}`.\n{marker}")
}

#[test]
fn blank_filters_are_no_filter() {
    assert_eq!(Filter::parse("").expect("parse succeeds"), None);
    assert_eq!(Filter::parse("   \n\t ").expect("parse succeeds"), None);
}

#[test]
fn comparisons_and_quoted_values_parse() {
    let examples = [
        ("channel = Ponce", "{channel} = {Ponce}"),
        ("subscribers = 12", "{subscribers} = {12}"),
        ("channel = 'Mister Mv'", "{channel} = {Mister Mv}"),
        ("channel = \"Mister Mv\"", "{channel} = {Mister Mv}"),
        ("'dog race' = Borzoi", "{dog race} = {Borzoi}"),
        (
            "\"dog race\" = 'Bernese Mountain'",
            "{dog race} = {Bernese Mountain}",
        ),
        ("channel != ponce", "{channel} != {ponce}"),
        ("subscribers < 1000", "{subscribers} < {1000}"),
        ("subscribers > 1000", "{subscribers} > {1000}"),
        ("subscribers <= 1000", "{subscribers} <= {1000}"),
        ("subscribers >= 1000", "{subscribers} >= {1000}"),
        ("subscribers 100 TO 1000", "{subscribers} {100} TO {1000}"),
        ("a.b.c=1", "{a.b.c} = {1}"),
        ("price>=-3.5", "{price} >= {-3.5}"),
        (" colour = green ", "{colour} = {green}"),
        ("title = \"\"", "{title} = {}"),
        ("NOT channel = ponce", "NOT ({channel} = {ponce})"),
        (
            "NOT subscribers 100 TO 1000",
            "NOT ({subscribers} {100} TO {1000})",
        ),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn escapes_are_decoded() {
    let examples = [
        (r"title = 'foo\\'", r"{title} = {foo\}"),
        (r"title = 'foo\\\\'", r"{title} = {foo\\}"),
        (r#"title = 'foo\x20\n\t\"\'"'"#, "{title} = {foo \n\t\"'\"}"),
        (
            r#"title = "Hello \"world\"""#,
            r#"{title} = {Hello "world"}"#,
        ),
        (r"title = 'I\'m tamo'", "{title} = {I'm tamo}"),
        (r#"title = "\u{1F600}""#, "{title} = {😀}"),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn in_lists_parse() {
    let examples = [
        ("colour IN[]", "{colour} IN[]"),
        ("colour IN[green]", "{colour} IN[{green}, ]"),
        ("colour IN[green,]", "{colour} IN[{green}, ]"),
        (
            "colour NOT IN[green,blue]",
            "NOT ({colour} IN[{green}, {blue}, ])",
        ),
        (
            " colour IN [  green , blue , ]",
            "{colour} IN[{green}, {blue}, ]",
        ),
        (
            " colour NOT  IN [green, blue] ",
            "NOT ({colour} IN[{green}, {blue}, ])",
        ),
        (
            "NOT (colour IN [green, blue])  AND color = green ",
            "AND[NOT ({colour} IN[{green}, {blue}, ]), {color} = {green}, ]",
        ),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn keyword_operators_parse() {
    let examples = [
        ("subscribers IS NULL", "{subscribers} IS NULL"),
        ("subscribers IS NOT NULL", "NOT ({subscribers} IS NULL)"),
        ("NOT subscribers IS NOT NULL", "{subscribers} IS NULL"),
        (
            "subscribers  IS   NOT   NULL",
            "NOT ({subscribers} IS NULL)",
        ),
        ("subscribers IS EMPTY", "{subscribers} IS EMPTY"),
        ("subscribers IS NOT EMPTY", "NOT ({subscribers} IS EMPTY)"),
        ("subscribers EXISTS", "{subscribers} EXISTS"),
        ("subscribers NOT EXISTS", "NOT ({subscribers} EXISTS)"),
        ("NOT subscribers NOT EXISTS", "{subscribers} EXISTS"),
        (
            "subscribers CONTAINS 'hello'",
            "{subscribers} CONTAINS {hello}",
        ),
        (
            "subscribers NOT CONTAINS hello",
            "NOT ({subscribers} CONTAINS {hello})",
        ),
        (
            "subscribers NOT   CONTAINS 'hello'",
            "NOT ({subscribers} CONTAINS {hello})",
        ),
        (
            "subscribers STARTS WITH 'hel'",
            "{subscribers} STARTS WITH {hel}",
        ),
        (
            "subscribers NOT STARTS WITH hel",
            "NOT ({subscribers} STARTS WITH {hel})",
        ),
        ("NOT NOT NOT NOT x = 5", "{x} = {5}"),
        ("NOT NOT (NOT NOT x = 5)", "{x} = {5}"),
        (
            r#"NOT "OR" EXISTS AND "EXISTS" NOT EXISTS"#,
            "AND[NOT ({OR} EXISTS), NOT ({EXISTS} EXISTS), ]",
        ),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn boolean_structure_follows_precedence_and_parentheses() {
    let examples = [
        (
            "channel = ponce AND 'dog race' != 'bernese mountain' OR subscribers > 1000",
            "OR[AND[{channel} = {ponce}, {dog race} != {bernese mountain}, ], {subscribers} > {1000}, ]",
        ),
        (
            "channel = ponce AND 'dog race' != 'bernese mountain' OR subscribers > 1000 OR colour = red OR colour = blue AND size = 7",
            "OR[AND[{channel} = {ponce}, {dog race} != {bernese mountain}, ], {subscribers} > {1000}, {colour} = {red}, AND[{colour} = {blue}, {size} = {7}, ], ]",
        ),
        (
            "channel = ponce AND ( 'dog race' != 'bernese mountain' OR subscribers > 1000 )",
            "AND[{channel} = {ponce}, OR[{dog race} != {bernese mountain}, {subscribers} > {1000}, ], ]",
        ),
        (
            "x = 1 OR NOT (colour IN [green, blue]  OR color = green) ",
            "OR[{x} = {1}, NOT (OR[{colour} IN[{green}, {blue}, ], {color} = {green}, ]), ]",
        ),
        ("NOT(x = 1)", "NOT ({x} = {1})"),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn geo_functions_parse() {
    let examples = [
        ("_geoRadius(12, 13, 14)", "_geoRadius({12}, {13}, {14})"),
        (
            "NOT _geoRadius(12, 13, 14)",
            "NOT (_geoRadius({12}, {13}, {14}))",
        ),
        (
            "_geoRadius(12,13,14,1000)",
            "_geoRadius({12}, {13}, {14}, {1000})",
        ),
        (
            "_geoRadius(-1.5e2, +.5, 3.)",
            "_geoRadius({-1.5e2}, {+.5}, {3.})",
        ),
        (
            "_geoBoundingBox([12, 13], [14, 15])",
            "_geoBoundingBox([{12}, {13}], [{14}, {15}])",
        ),
        (
            "_geoBoundingBox([12,13],[14,15])",
            "_geoBoundingBox([{12}, {13}], [{14}, {15}])",
        ),
        (
            "_geoPolygon([12, 13], [14, 15], [16, 17])",
            "_geoPolygon([[{12}, {13}], [{14}, {15}], [{16}, {17}], ])",
        ),
        (
            "_geoPolygon([12, 13], [14, 15], [-1.2,2939.2], [1,1],)",
            "_geoPolygon([[{12}, {13}], [{14}, {15}], [{-1.2}, {2939.2}], [{1}, {1}], ])",
        ),
        (
            "(a = 1 OR b > 2) AND _geoRadius(12, 13, 14)",
            "AND[OR[{a} = {1}, {b} > {2}, ], _geoRadius({12}, {13}, {14}), ]",
        ),
        ("x = _geoPolygon", "{x} = {_geoPolygon}"),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn vector_filters_parse() {
    let examples = [
        ("_vectors EXISTS", "_vectors EXISTS"),
        (
            "_vectors.embedderName EXISTS",
            r#"_vectors."embedderName" EXISTS"#,
        ),
        (
            "_vectors.embedderName.documentTemplate EXISTS",
            r#"_vectors."embedderName".documentTemplate EXISTS"#,
        ),
        (
            "_vectors.embedderName.regenerate EXISTS",
            r#"_vectors."embedderName".regenerate EXISTS"#,
        ),
        (
            "  _vectors.embedderName.fragments.fragmentName   EXISTS",
            r#"_vectors."embedderName".fragments."fragmentName" EXISTS"#,
        ),
        ("  _vectors  NOT  EXISTS", "NOT (_vectors EXISTS)"),
        (
            r#"_vectors." valid.name  ".fragments."also.. valid! " EXISTS"#,
            r#"_vectors." valid.name  ".fragments."also.. valid! " EXISTS"#,
        ),
        ("_vectors = 3", "{_vectors} = {3}"),
        ("_vectorsfoo EXISTS", "{_vectorsfoo} EXISTS"),
    ];
    for (input, expected) in examples {
        assert_eq!(parsed(input), expected, "input {input:?}");
    }
}

#[test]
fn the_deepest_accepted_nestings_parse() {
    let parentheses = format!("{}x = 1{}", "(".repeat(49), ")".repeat(49));
    assert_eq!(parsed(&parentheses), "{x} = {1}");
    // Each NOT costs one level and the condition after the last one two more.
    let negations = format!("{}x = 1", "NOT ".repeat(197));
    assert_eq!(parsed(&negations), "NOT ({x} = {1})");
}

#[test]
fn too_deep_nestings_are_rejected_where_the_limit_is_crossed() {
    let message = "The filter exceeded the maximum depth limit. Try rewriting the filter so that it contains fewer nested conditions.";
    let parentheses = format!("{}x = 1{}", "(".repeat(50), ")".repeat(50));
    assert_eq!(
        rejected(&parentheses),
        format!("{message}\n51:106 {parentheses}")
    );
    let negations = format!("{}x = 1", "NOT ".repeat(198));
    assert_eq!(
        rejected(&negations),
        format!("{message}\n793:798 {negations}")
    );
    let negations = format!("{}x = 1", "NOT ".repeat(199));
    assert_eq!(
        rejected(&negations),
        format!("{message}\n797:802 {negations}")
    );
    // Far deeper inputs are rejected the same way, without exhausting the stack.
    let huge = "(".repeat(100_000);
    assert!(rejected(&huge).starts_with(message));
}

#[test]
fn errors_point_at_the_offending_text() {
    let examples: Vec<(&str, String)> = vec![
        (
            "channel = Ponce = 12",
            "Found unexpected characters at the end of the filter: `= 12`. You probably forgot an `OR` or an `AND` rule.\n17:21 channel = Ponce = 12".into(),
        ),
        ("channel =    ", "Was expecting a value but instead got nothing.\n14:14 channel =    ".into()),
        ("channel = 🐻", "Was expecting a value but instead got `🐻`.\n11:12 channel = 🐻".into()),
        (
            "channel = 🐻 AND followers < 100",
            "Was expecting a value but instead got `🐻`.\n11:12 channel = 🐻 AND followers < 100".into(),
        ),
        ("'OR'", expecting_operation_at("\\'OR\\'", "1:5 'OR'")),
        (
            "OR",
            "Was expecting a value but instead got `OR`, which is a reserved keyword. To use `OR` as a field name or a value, surround it by quotes.\n1:3 OR".into(),
        ),
        ("channel Ponce", expecting_operation_at("channel Ponce", "1:14 channel Ponce")),
        (
            "channel = Ponce OR",
            format!("Was expecting an operation {OPERATIONS} but instead got nothing.\n19:19 channel = Ponce OR"),
        ),
        ("title & 42", expecting_operation_at("title & 42", "1:11 title & 42")),
        ("title & Glass", expecting_operation_at("title & Glass", "1:14 title & Glass")),
        ("doggo", expecting_operation_at("doggo", "1:6 doggo")),
        ("cool doggo", expecting_operation_at("cool doggo", "1:11 cool doggo")),
        ("colour NOT EXIST", expecting_operation_at("colour NOT EXIST", "1:17 colour NOT EXIST")),
        (
            "subscribers 100 TO1000",
            expecting_operation_at("subscribers 100 TO1000", "1:23 subscribers 100 TO1000"),
        ),
        ("value NULL", expecting_operation_at("value NULL", "1:11 value NULL")),
        ("value NOT NULL", expecting_operation_at("value NOT NULL", "1:15 value NOT NULL")),
        ("value EMPTY", expecting_operation_at("value EMPTY", "1:12 value EMPTY")),
        ("value IS", expecting_operation_at("value IS", "1:9 value IS")),
        ("value IS NOT", expecting_operation_at("value IS NOT", "1:13 value IS NOT")),
        ("value IS EXISTS", expecting_operation_at("value IS EXISTS", "1:16 value IS EXISTS")),
        (
            "value IS NOT EXISTS",
            expecting_operation_at("value IS NOT EXISTS", "1:20 value IS NOT EXISTS"),
        ),
        (
            "channel = ponce ORdog != 'bernese mountain'",
            "Found unexpected characters at the end of the filter: `ORdog != \\'bernese mountain\\'`. You probably forgot an `OR` or an `AND` rule.\n17:44 channel = ponce ORdog != 'bernese mountain'".into(),
        ),
        (
            "channel = mv OR followers >= 1000)",
            "Found unexpected characters at the end of the filter: `)`. You probably forgot an `OR` or an `AND` rule.\n34:35 channel = mv OR followers >= 1000)".into(),
        ),
        (
            "channel = mv OR (followers >= 1000",
            "Expression `(followers >= 1000` is missing the following closing delimiter: `)`.\n17:35 channel = mv OR (followers >= 1000".into(),
        ),
        (
            "channel = 'ponce",
            "Expression `\\'ponce` is missing the following closing delimiter: `'`.\n11:17 channel = 'ponce".into(),
        ),
        (
            "channel = \"ponce",
            "Expression `\\\"ponce` is missing the following closing delimiter: `\"`.\n11:17 channel = \"ponce".into(),
        ),
        (
            "x = EXISTS",
            "Was expecting a value but instead got `EXISTS`, which is a reserved keyword. To use `EXISTS` as a field name or a value, surround it by quotes.\n5:11 x = EXISTS".into(),
        ),
        (
            "AND = 8",
            "Was expecting a value but instead got `AND`, which is a reserved keyword. To use `AND` as a field name or a value, surround it by quotes.\n1:4 AND = 8".into(),
        ),
        (
            "NOT OR EXISTS AND EXISTS NOT EXISTS",
            "Was expecting a value but instead got `OR`, which is a reserved keyword. To use `OR` as a field name or a value, surround it by quotes.\n5:7 NOT OR EXISTS AND EXISTS NOT EXISTS".into(),
        ),
        ("title = 'foo\\", "Malformed value: `foo\\\\`.\n10:14 title = 'foo\\".into()),
        (
            "title = \"\\x1g\"",
            "Found an invalid escaped sequence number: `\\\\x1g`.\n10:14 title = \"\\x1g\"".into(),
        ),
    ];
    for (input, expected) in examples {
        assert_eq!(rejected(input), expected, "input {input:?}");
    }
}

#[test]
fn in_list_errors_point_at_the_list() {
    let examples = [
        (
            "colour IN blue, green]",
            "Expected `[` after `IN` keyword.\n11:23 colour IN blue, green]",
        ),
        (
            "colour IN [blue, green, 'blue' > 2]",
            "Expected only comma-separated field names inside `IN[..]` but instead found `> 2]`.\n32:36 colour IN [blue, green, 'blue' > 2]",
        ),
        (
            "colour IN [blue, green, AND]",
            "Expected only comma-separated field names inside `IN[..]` but instead found `AND]`.\n25:29 colour IN [blue, green, AND]",
        ),
        (
            "colour IN [blue, green",
            "Expected matching `]` after the list of field names given to `IN[`\n23:23 colour IN [blue, green",
        ),
        (
            "colour IN ['blue, green",
            "Expression `\\'blue, green` is missing the following closing delimiter: `'`.\n12:24 colour IN ['blue, green",
        ),
    ];
    for (input, expected) in examples {
        assert_eq!(rejected(input), expected, "input {input:?}");
    }
}

#[test]
fn geo_errors_name_the_function() {
    let radius_form = "The `_geoRadius` filter must be in the form: `_geoRadius(latitude, longitude, radius, optionalResolution)`.";
    let box_form = "The `_geoBoundingBox` filter expects two pairs of arguments: `_geoBoundingBox([latitude, longitude], [latitude, longitude])`.";
    let polygon_form = "The `_geoPolygon` filter doesn't match the expected format: `_geoPolygon([latitude, longitude], [latitude, longitude])`.";
    let reserved = |name: &str| {
        format!(
            "`{name}` is a reserved keyword and thus can't be used as a filter expression. Use the `_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter on `_geo` coordinates."
        )
    };
    let examples: Vec<(&str, String)> = vec![
        ("_geoRadius", format!("{radius_form}\n11:11 _geoRadius")),
        ("_geoRadius = 12", format!("{radius_form}\n11:16 _geoRadius = 12")),
        ("_geoRadius(1, 2)", "Was expecting 3 or 4 arguments for `_geoRadius`, but instead found 2.\n17:17 _geoRadius(1, 2)".into()),
        ("_geoRadius(1, 2, 3, 4, 5)", "Was expecting 3 or 4 arguments for `_geoRadius`, but instead found 5.\n26:26 _geoRadius(1, 2, 3, 4, 5)".into()),
        ("_geoRadius(1e, 2, 3)", format!("{radius_form}\n14:21 _geoRadius(1e, 2, 3)")),
        ("_geoRadius(a, 2, 3)", format!("{radius_form}\n12:20 _geoRadius(a, 2, 3)")),
        ("_geoBoundingBox", format!("{box_form}\n16:16 _geoBoundingBox")),
        ("_geoBoundingBox = 12", format!("{box_form}\n16:21 _geoBoundingBox = 12")),
        ("_geoBoundingBox(1.0, 1.0)", format!("{box_form}\n17:26 _geoBoundingBox(1.0, 1.0)")),
        ("_geoBoundingBox([1, 2])", format!("{box_form}\n24:24 _geoBoundingBox([1, 2])")),
        ("_geoBoundingBox([1,2,3],[1,2])", "Was expecting 2 coordinates but instead found 3.\n18:19 _geoBoundingBox([1,2,3],[1,2])".into()),
        ("_geoPolygon([1,2,3])", "The `_geoPolygon` filter expects at least 3 points but only 1 were specified\n18:19 _geoPolygon([1,2,3])".into()),
        ("_geoPolygon(1,2,3)", format!("{polygon_form}\n13:19 _geoPolygon(1,2,3)")),
        ("_geoPolygon([1,2],[1,2],[1,2,3])", "Was expecting 2 coordinates but instead found 3.\n26:27 _geoPolygon([1,2],[1,2],[1,2,3])".into()),
        ("_geoPolygon([1,2],[1,2,3])", "The `_geoPolygon` filter expects at least 3 points but only 2 were specified\n24:25 _geoPolygon([1,2],[1,2,3])".into()),
        ("_geoPolygon(1)", format!("{polygon_form}\n13:15 _geoPolygon(1)")),
        ("_geoPolygon([1,2)", format!("{polygon_form}\n17:18 _geoPolygon([1,2)")),
        ("_geoPoint(12, 13, 14)", format!("{}\n1:22 _geoPoint(12, 13, 14)", reserved("_geoPoint"))),
        ("position <= _geoPoint(12, 13, 14)", format!("{}\n13:34 position <= _geoPoint(12, 13, 14)", reserved("_geoPoint"))),
        ("_geoDistance(12, 13, 14)", format!("{}\n1:25 _geoDistance(12, 13, 14)", reserved("_geoDistance"))),
        ("position <= _geoDistance(12, 13, 14)", format!("{}\n13:37 position <= _geoDistance(12, 13, 14)", reserved("_geoDistance"))),
        ("_geo(12, 13, 14)", format!("{}\n1:17 _geo(12, 13, 14)", reserved("_geo"))),
        ("position <= _geo(12, 13, 14)", format!("{}\n13:29 position <= _geo(12, 13, 14)", reserved("_geo"))),
        ("position <= _geoRadius(12, 13, 14)", "The `_geoRadius` filter is an operation and can't be used as a value.\n13:35 position <= _geoRadius(12, 13, 14)".into()),
        ("position <= _geoBoundingBox([1, 2], [3, 4])", "The `_geoBoundingBox` filter is an operation and can't be used as a value.\n13:44 position <= _geoBoundingBox([1, 2], [3, 4])".into()),
    ];
    for (input, expected) in examples {
        assert_eq!(rejected(input), expected, "input {input:?}");
    }
}

#[test]
fn vector_filter_errors_name_the_part() {
    let examples = [
        (
            r#"_vectors _vectors EXISTS"#,
            "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.\n10:25 _vectors _vectors EXISTS",
        ),
        (
            r#"_vectors. embedderName EXISTS"#,
            "Was expecting embedder name but found nothing.\n10:11 _vectors. embedderName EXISTS",
        ),
        (
            r#"_vectors .embedderName EXISTS"#,
            "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.\n10:30 _vectors .embedderName EXISTS",
        ),
        (
            r#"_vectors.embedderName. EXISTS"#,
            "Was expecting one of `.fragments`, `.userProvided`, `.documentTemplate`, `.regenerate` or nothing, but instead found a point without a valid value.\n22:23 _vectors.embedderName. EXISTS",
        ),
        (
            r#"_vectors."embedderName EXISTS"#,
            "The quotes in one of the values are inconsistent.\n10:30 _vectors.\"embedderName EXISTS",
        ),
        (
            r#"_vectors."embedderNam"e EXISTS"#,
            "The vector filter has leftover tokens.\n23:31 _vectors.\"embedderNam\"e EXISTS",
        ),
        (
            r#"_vectors.embedderName.documentTemplate. EXISTS"#,
            "Was expecting one of `.fragments`, `.userProvided`, `.documentTemplate`, `.regenerate` or nothing, but instead found a point without a valid value.\n39:40 _vectors.embedderName.documentTemplate. EXISTS",
        ),
        (
            r#"_vectors.embedderName.fragments EXISTS"#,
            "The vector filter is missing a fragment name.\n32:39 _vectors.embedderName.fragments EXISTS",
        ),
        (
            r#"_vectors.embedderName.fragments. EXISTS"#,
            "The vector filter's fragment name is invalid.\n33:40 _vectors.embedderName.fragments. EXISTS",
        ),
        (
            r#"_vectors.embedderName.fragments.test test EXISTS"#,
            "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.\n38:49 _vectors.embedderName.fragments.test test EXISTS",
        ),
        (
            r#"_vectors.embedderName.fragments. test EXISTS"#,
            "The vector filter's fragment name is invalid.\n33:45 _vectors.embedderName.fragments. test EXISTS",
        ),
        (
            r#"_vectors.embedderName .fragments. test EXISTS"#,
            "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.\n23:46 _vectors.embedderName .fragments. test EXISTS",
        ),
        (
            r#"_vectors.embedderName .fragments.test EXISTS"#,
            "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.\n23:45 _vectors.embedderName .fragments.test EXISTS",
        ),
        (
            r#"_vectors.embedderName.fargments.test EXISTS"#,
            "Was expecting one of `fragments`, `userProvided`, `documentTemplate`, `regenerate` or nothing, but instead found `fargments`. Did you mean `fragments`?\n23:32 _vectors.embedderName.fargments.test EXISTS",
        ),
        (
            r#"_vectors.embedderName.zzzzzz EXISTS"#,
            "Was expecting one of `fragments`, `userProvided`, `documentTemplate`, `regenerate` or nothing, but instead found `zzzzzz`.\n23:29 _vectors.embedderName.zzzzzz EXISTS",
        ),
        (
            r#"_vectors.embedderName."userProvided" EXISTS"#,
            "Was expecting this part to be unquoted.\n24:36 _vectors.embedderName.\"userProvided\" EXISTS",
        ),
        (
            r#"_vectors.embedderName.userProvided.fragments.test EXISTS"#,
            "Vector filter can only accept one of `fragments`, `userProvided`, `documentTemplate` or `regenerate`, but found both `userProvided` and `fragments`.\n36:45 _vectors.embedderName.userProvided.fragments.test EXISTS",
        ),
    ];
    for (input, expected) in examples {
        assert_eq!(rejected(input), expected, "input {input:?}");
    }
}

#[test]
fn keywords_are_case_sensitive() {
    assert_eq!(
        rejected("a = 1 and b = 2"),
        "Found unexpected characters at the end of the filter: `and b = 2`. You probably forgot an `OR` or an `AND` rule.\n7:16 a = 1 and b = 2"
    );
    assert_eq!(parsed("and = or"), "{and} = {or}");
}

#[test]
fn positions_count_characters_on_the_current_line() {
    assert_eq!(
        rejected("a = 1 AND\nb ! 2"),
        format!("Was expecting an operation {OPERATIONS} at `b ! 2`.\n1:6 a = 1 AND\nb ! 2")
    );
    assert_eq!(
        rejected("é = 1 ≠"),
        "Found unexpected characters at the end of the filter: `≠`. You probably forgot an `OR` or an `AND` rule.\n7:8 é = 1 ≠"
    );
}

#[test]
fn contains_and_starts_with_keywords_are_reported_with_their_position() {
    let filter = Filter::parse("doggo != echo AND doggo CONTAINS kefir")
        .expect("parse succeeds")
        .expect("the value exists");
    let keyword = filter
        .expression()
        .contains_keyword()
        .expect("contains_keyword succeeds");
    assert_eq!(
        filter.located(keyword, "m"),
        "m\n25:33 doggo != echo AND doggo CONTAINS kefir"
    );
    let filter = Filter::parse("a NOT STARTS WITH b")
        .expect("parse succeeds")
        .expect("the value exists");
    let keyword = filter
        .expression()
        .starts_with_keyword()
        .expect("starts_with_keyword succeeds");
    assert_eq!((keyword.start, keyword.end), (6, 17));
    assert!(filter.expression().contains_keyword().is_none());
}
