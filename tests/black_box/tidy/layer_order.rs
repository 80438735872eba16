//! The layer order of `src/` (ARCHITECTURE.md §1.3, §10 rule 2), checked against the
//! imports. The layers and the arrows inside a layer are read from the drawing in the
//! document itself, so the document and the check cannot drift apart. The checks:
//! - every top-level module of `src/` (folder or single file) is drawn in one layer, and
//!   every module drawn exists; `test_support` (test code only) sits below every layer and
//!   the crate roots `lib.rs` and `main.rs` above them;
//! - every `crate::<module>` path in the non-test code of a module names a module of a
//!   lower layer, or a module of its own layer reached along the arrows drawn (one arrow or
//!   several in a row); a failure names the file, the line and the import;
//! - the test code of `src/` keeps the same order, so `test_support` imports nothing;
//! - the checker itself, on a fabricated drawing and fabricated source files, catches an
//!   arrow pointing up and an arrow not drawn inside a layer.
//!
//! How the drawing is read: a line that starts with a number opens that layer; its name
//! (`use cases`) ends at the first two spaces in a row. Then come module names, `a ──> b`
//! (`a` imports `b`), `a <── b` (`b` imports `a`), and lists `b, c` on either side of an
//! arrow. Two names in a row without a comma or an arrow between them start a new chain.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::{
    all_server_sources, modules_named_on_line, numbered_code_lines,
    numbered_lines_without_comments, server_sources, top_level_module, workspace_root,
};

/// The heading of the section whose first code block is the drawing of the layers.
const LAYER_ORDER_HEADING: &str = "### 1.3 Layer order of `src/`";

/// `a ──> b`: `a` imports `b`.
const LEFT_IMPORTS_RIGHT: &str = "──>";

/// `a <── b`: `b` imports `a`.
const RIGHT_IMPORTS_LEFT: &str = "<──";

/// The one module of test code only; §1.3 says it imports nothing, so it sits below the
/// lowest layer drawn.
const TEST_ONLY_MODULE: &str = "test_support";

/// The layer of [`TEST_ONLY_MODULE`]: the drawing numbers its layers from 1.
const TEST_ONLY_LAYER: usize = 0;

/// `lib.rs` declares the modules and `main.rs` reaches them as `coresearch::…`: both sit
/// above every layer drawn.
const CRATE_ROOTS: [&str; 2] = ["lib", "main"];

/// The layers of the top-level modules and the arrows drawn inside a layer.
#[derive(Debug, Default)]
struct LayerOrder {
    layer_of: BTreeMap<String, usize>,
    /// Importer → the modules of its own layer the drawing lets it import directly.
    arrows: BTreeMap<String, BTreeSet<String>>,
}

impl LayerOrder {
    /// Puts `module` in `layer`; a module drawn in two layers is an error.
    fn place(&mut self, module: &str, layer: usize) -> Result<(), String> {
        match self.layer_of.insert(module.to_owned(), layer) {
            Some(earlier) if earlier != layer => Err(format!(
                "`{module}` is drawn in layer {earlier} and in layer {layer}"
            )),
            _ => Ok(()),
        }
    }

    fn draw_arrow(&mut self, importer: &str, imported: &str) {
        self.arrows
            .entry(importer.to_owned())
            .or_default()
            .insert(imported.to_owned());
    }

    /// Whether `to` is reached from `from` along one arrow or several in a row.
    fn along_arrows(&self, from: &str, to: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut pending = vec![from];
        while let Some(module) = pending.pop() {
            for next in self.arrows.get(module).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if seen.insert(next.as_str()) {
                    pending.push(next.as_str());
                }
            }
        }
        false
    }

    /// Whether `importer` may import `imported`, and if not, why.
    fn judge(&self, importer: &str, imported: &str) -> Result<(), String> {
        let layer = |module: &str| {
            self.layer_of.get(module).copied().ok_or_else(|| {
                format!(
                    "`{module}` is in no layer: place it in the drawing of ARCHITECTURE.md §1.3"
                )
            })
        };
        let (from, to) = (layer(importer)?, layer(imported)?);
        if to < from || (to == from && self.along_arrows(importer, imported)) {
            Ok(())
        } else if to > from {
            Err(format!(
                "`{importer}` (layer {from}) imports `{imported}` (layer {to}), an arrow pointing up"
            ))
        } else {
            Err(format!(
                "`{importer}` imports `{imported}` inside layer {from}, along no arrow drawn in ARCHITECTURE.md §1.3"
            ))
        }
    }
}

/// One `crate::<module>` path of another top-level module, where it is written.
#[derive(Debug)]
struct Import {
    file: String,
    line_number: usize,
    code: String,
    importer: String,
    imported: String,
}

/// The imports between top-level modules in the lines `lines_of` keeps of each source.
fn imports_of(
    sources: &[(PathBuf, String)],
    lines_of: fn(&str) -> Vec<(usize, &str)>,
) -> Vec<Import> {
    let modules: BTreeSet<String> = sources
        .iter()
        .map(|(relative, _)| top_level_module(relative))
        .collect();
    let mut imports = Vec::new();
    for (relative, text) in sources {
        let importer = top_level_module(relative);
        for (line_number, line) in lines_of(text) {
            for imported in modules_named_on_line(line, &modules) {
                if imported != importer {
                    imports.push(Import {
                        file: format!("src/{}", relative.display()),
                        line_number,
                        code: line.trim().to_owned(),
                        importer: importer.clone(),
                        imported,
                    });
                }
            }
        }
    }
    imports
}

/// Every import the order forbids, as `file:line: why: code`.
fn layer_breaches(order: &LayerOrder, imports: &[Import]) -> Vec<String> {
    imports
        .iter()
        .filter_map(|import| {
            let reason = order.judge(&import.importer, &import.imported).err()?;
            Some(format!(
                "{}:{}: {reason}: {}",
                import.file, import.line_number, import.code
            ))
        })
        .collect()
}

/// The modules of `src/` the order does not place, and the modules it places that `src/`
/// does not have.
fn unplaced_and_absent_modules(order: &LayerOrder, modules: &BTreeSet<String>) -> Vec<String> {
    let unplaced = modules
        .iter()
        .filter(|module| !order.layer_of.contains_key(*module))
        .map(|module| {
            format!("`{module}` is in no layer: place it in the drawing of ARCHITECTURE.md §1.3")
        });
    let absent = order
        .layer_of
        .keys()
        .filter(|module| !modules.contains(*module))
        .map(|module| {
            format!("`{module}` is drawn in ARCHITECTURE.md §1.3 but src/ has no such module")
        });
    unplaced.chain(absent).collect()
}

fn is_module_name(token: &str) -> bool {
    token.starts_with(|character: char| character.is_ascii_lowercase())
        && token.chars().all(|character| {
            character.is_ascii_lowercase() || character.is_ascii_digit() || character == '_'
        })
}

/// Places the modules of one chain (`a ──> b, c <── d`) in `layer` and draws its arrows.
/// `lists` has one more entry than `operators`.
fn draw_chain(
    order: &mut LayerOrder,
    layer: usize,
    lists: &[Vec<&str>],
    operators: &[&str],
) -> Result<(), String> {
    for module in lists.iter().flatten() {
        order.place(module, layer)?;
    }
    for (index, operator) in operators.iter().enumerate() {
        let (importers, imported) = if *operator == LEFT_IMPORTS_RIGHT {
            (&lists[index], &lists[index + 1])
        } else {
            (&lists[index + 1], &lists[index])
        };
        for importer in importers {
            for target in imported {
                order.draw_arrow(importer, target);
            }
        }
    }
    Ok(())
}

/// Reads the modules and arrows of one line of the drawing, after the layer's number and
/// name, into `layer`.
fn parse_drawing_line(order: &mut LayerOrder, layer: usize, content: &str) -> Result<(), String> {
    let spaced = content.replace(',', " , ");
    let mut lists: Vec<Vec<&str>> = Vec::new();
    let mut operators: Vec<&str> = Vec::new();
    let mut previous: Option<&str> = None;
    for token in spaced.split_whitespace() {
        if [LEFT_IMPORTS_RIGHT, RIGHT_IMPORTS_LEFT, ","].contains(&token) {
            if !previous.is_some_and(is_module_name) {
                return Err(format!("`{token}` without a module before it"));
            }
            if token != "," {
                operators.push(token);
            }
        } else if !is_module_name(token) {
            return Err(format!("`{token}` is neither a module nor an arrow"));
        } else if previous == Some(",") {
            lists
                .last_mut()
                .into_iter()
                .for_each(|list| list.push(token));
        } else if previous.is_some_and(|before| !is_module_name(before)) {
            lists.push(vec![token]);
        } else {
            draw_chain(order, layer, &lists, &operators)?;
            lists = vec![vec![token]];
            operators.clear();
        }
        previous = Some(token);
    }
    if let Some(last) = previous.filter(|last| !is_module_name(last)) {
        return Err(format!("the line ends with `{last}`"));
    }
    draw_chain(order, layer, &lists, &operators)
}

/// The layer number a line of the drawing opens, if it opens one, and the rest of the line
/// after the number and the layer's name.
fn split_layer_number(line: &str) -> Result<(Option<usize>, &str), String> {
    let trimmed = line.trim_start();
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return Ok((None, trimmed));
    }
    let number: usize = trimmed[..digits]
        .parse()
        .map_err(|error| format!("layer number {:?}: {error}", &trimmed[..digits]))?;
    let named = trimmed[digits..].trim_start();
    let content = named
        .find("  ")
        .map(|end| &named[end..])
        .ok_or_else(|| format!("layer {number} has a name but no modules"))?;
    Ok((Some(number), content))
}

/// The layer order a drawing shows: layers numbered from the top down to 1, arrows only
/// inside a layer and on no circle.
fn parse_layer_order(drawing: &str) -> Result<LayerOrder, String> {
    let mut order = LayerOrder::default();
    let mut current: Option<usize> = None;
    for line in drawing.lines().filter(|line| !line.trim().is_empty()) {
        let (number, content) = split_layer_number(line)?;
        if let Some(number) = number {
            if number == TEST_ONLY_LAYER || current.is_some_and(|above| number >= above) {
                return Err(format!(
                    "layer {number} is out of order: the layers go down to 1"
                ));
            }
            current = Some(number);
        }
        let layer = current.ok_or_else(|| format!("{line:?} comes before the first layer"))?;
        parse_drawing_line(&mut order, layer, content)
            .map_err(|reason| format!("{reason}, in {line:?}"))?;
    }
    if let Some(module) = order
        .layer_of
        .keys()
        .find(|module| order.along_arrows(module, module))
    {
        return Err(format!("`{module}` is on a circle of arrows"));
    }
    Ok(order)
}

/// The first code block after the heading of ARCHITECTURE.md §1.3.
fn drawing_of_the_document() -> String {
    let path = workspace_root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("ARCHITECTURE.md can be read");
    let (_, section) = text
        .split_once(LAYER_ORDER_HEADING)
        .expect("ARCHITECTURE.md has the heading of §1.3");
    let (_, opened) = section
        .split_once("```\n")
        .expect("§1.3 opens a code block");
    let (drawing, _) = opened.split_once("```").expect("§1.3's code block ends");
    drawing.to_owned()
}

/// The order the document draws, with [`TEST_ONLY_MODULE`] below it and the
/// [`CRATE_ROOTS`] above it.
fn order_of_the_document() -> LayerOrder {
    let mut order = parse_layer_order(&drawing_of_the_document())
        .unwrap_or_else(|reason| panic!("the drawing of ARCHITECTURE.md §1.3: {reason}"));
    let above_all = order.layer_of.values().max().copied().unwrap_or(0) + 1;
    let outside_the_drawing = CRATE_ROOTS
        .iter()
        .map(|root| (*root, above_all))
        .chain([(TEST_ONLY_MODULE, TEST_ONLY_LAYER)]);
    for (module, layer) in outside_the_drawing {
        order
            .place(module, layer)
            .unwrap_or_else(|reason| panic!("{reason}: §1.3 draws no such module"));
    }
    order
}

fn modules_of(sources: &[(PathBuf, String)]) -> BTreeSet<String> {
    sources
        .iter()
        .map(|(relative, _)| top_level_module(relative))
        .collect()
}

#[test]
fn the_document_draws_the_layers_and_arrows_it_describes() {
    let order = order_of_the_document();
    assert_eq!(order.layer_of["backups"], 8, "the entry layer is 8");
    assert_eq!(order.layer_of["routes"], 7);
    assert_eq!(order.layer_of["host"], order.layer_of["control"]);
    assert_eq!(order.layer_of["data_dir"], 1, "the foundation is 1");
    assert_eq!(order.layer_of["test_support"], 0);
    assert_eq!(order.layer_of["main"], 9);
    for (importer, imported) in [
        ("backups", "server"),
        ("metrics", "tasks"),
        ("chats", "indexes"),
        ("config", "runtime"),
        ("decode", "errors"),
        ("network", "embedders"),
    ] {
        assert!(
            order.judge(importer, imported).is_ok(),
            "{importer} ──> {imported}"
        );
    }
    for (importer, imported) in [
        ("server", "banner"),
        ("runtime", "config"),
        ("tasks", "proxy"),
    ] {
        assert!(
            order.judge(importer, imported).is_err(),
            "{importer} ─/─> {imported}"
        );
    }
}

#[test]
fn every_module_of_src_is_drawn_in_the_layer_order() {
    let modules = modules_of(&all_server_sources());
    assert!(modules.contains("routes") && modules.contains("data_dir"));
    let mistakes = unplaced_and_absent_modules(&order_of_the_document(), &modules);
    assert!(
        mistakes.is_empty(),
        "the drawing of ARCHITECTURE.md §1.3 and the modules of src/ differ:\n{mistakes:#?}"
    );
}

#[test]
fn the_code_of_src_imports_down_the_layers_or_along_an_arrow() {
    let imports = imports_of(&server_sources(), numbered_code_lines);
    assert!(
        imports
            .iter()
            .any(|import| import.importer == "routes" && import.imported == "search"),
        "the reader finds the imports: routes import search"
    );
    let breaches = layer_breaches(&order_of_the_document(), &imports);
    assert!(
        breaches.is_empty(),
        "imports against the layer order of ARCHITECTURE.md §1.3:\n{breaches:#?}"
    );
}

#[test]
fn the_test_code_of_src_keeps_the_same_layer_order() {
    let imports = imports_of(&all_server_sources(), numbered_lines_without_comments);
    assert!(
        imports
            .iter()
            .any(|import| import.imported == TEST_ONLY_MODULE),
        "the reader finds the imports of test code: tests import test_support"
    );
    let breaches = layer_breaches(&order_of_the_document(), &imports);
    assert!(
        breaches.is_empty(),
        "imports of test code against the layer order of ARCHITECTURE.md §1.3:\n{breaches:#?}"
    );
}

/// A fabricated `src/`: `epsilon` imports up and against an arrow, `alpha` inside its
/// layer along no arrow, `omega` is drawn nowhere; the rest is allowed.
fn fabricated_sources() -> Vec<(PathBuf, String)> {
    [
        (
            "alpha/mod.rs",
            "use crate::gamma::AlongTwoArrows;\nuse crate::delta::NoArrow;\n",
        ),
        ("beta/mod.rs", "use crate::epsilon::Down;\n"),
        ("gamma.rs", "//! Imports nothing.\n"),
        ("delta.rs", "use crate::{epsilon::Down, zeta};\n"),
        (
            "epsilon.rs",
            "//! Names `crate::alpha` only in a comment.\nuse crate::{alpha::Up, zeta};\n\
             #[cfg(test)]\nmod tests {\n    use crate::beta::UpInTestCode;\n}\n",
        ),
        ("zeta.rs", "use crate::epsilon::AlongTheArrow;\n"),
        ("omega.rs", "use crate::zeta::Drawn;\n"),
    ]
    .into_iter()
    .map(|(path, text)| (PathBuf::from(path), text.to_owned()))
    .collect()
}

#[test]
fn the_layer_check_catches_an_arrow_pointing_up_and_one_not_drawn() {
    let order = parse_layer_order(
        " 2  upper        alpha ──> beta ──> gamma      delta\n\
         \x20                beta, delta <── omicron\n\
         \x201  lower side   epsilon <── zeta\n",
    )
    .expect("the fabricated drawing reads");
    let sources = fabricated_sources();
    let breaches = layer_breaches(&order, &imports_of(&sources, numbered_code_lines));
    let places: Vec<&str> = breaches
        .iter()
        .map(|breach| breach.split(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        places,
        [
            "src/alpha/mod.rs:2",
            "src/epsilon.rs:2",
            "src/epsilon.rs:2",
            "src/omega.rs:1"
        ],
        "{breaches:#?}"
    );
    assert!(
        breaches[0].contains("along no arrow drawn"),
        "{}",
        breaches[0]
    );
    assert!(
        breaches[1].contains("an arrow pointing up"),
        "{}",
        breaches[1]
    );
    assert!(breaches[1].ends_with("use crate::{alpha::Up, zeta};"));
    assert!(breaches[2].contains("`epsilon` imports `zeta` inside layer 1"));
    assert!(breaches[3].contains("`omega` is in no layer: place it"));
    let with_tests = layer_breaches(
        &order,
        &imports_of(&sources, numbered_lines_without_comments),
    );
    assert!(
        with_tests.iter().any(|breach| breach
            .starts_with("src/epsilon.rs:5: `epsilon` (layer 1) imports `beta` (layer 2)")),
        "{with_tests:#?}"
    );
    let mistakes = unplaced_and_absent_modules(&order, &modules_of(&sources));
    assert_eq!(mistakes.len(), 2, "{mistakes:#?}");
    assert!(mistakes[0].starts_with("`omega` is in no layer"));
    assert!(mistakes[1].starts_with("`omicron` is drawn"));
}

#[test]
fn a_drawing_that_cannot_be_an_order_is_refused() {
    for (drawing, reason) in [
        (" 2  top   alpha ──>\n", "the line ends with `──>`"),
        (" 2  top   ──> alpha\n", "`──>` without a module before it"),
        (
            " 2  top   alpha, ──> beta\n",
            "`──>` without a module before it",
        ),
        (
            " 2  top   Alpha\n",
            "`Alpha` is neither a module nor an arrow",
        ),
        ("     alpha\n", "comes before the first layer"),
        (
            " 1  low   alpha\n 2  top   beta\n",
            "layer 2 is out of order",
        ),
        (
            " 2  top   alpha\n 1  low   alpha\n",
            "`alpha` is drawn in layer 2 and in layer 1",
        ),
        (
            " 2  top   alpha ──> beta ──> alpha\n",
            "is on a circle of arrows",
        ),
        (" 2  top\n", "layer 2 has a name but no modules"),
        (" 0  test   alpha\n", "layer 0 is out of order"),
    ] {
        let refusal = parse_layer_order(drawing).expect_err(drawing);
        assert!(refusal.contains(reason), "{drawing:?}: {refusal}");
    }
}
