//! Workloads: weighted lists of request templates, either built in (`health`,
//! `features`) or read from a small JSON or TOML file.
//!
//! Invariants of a `Workload` (checked by `Workload::new`): at least one
//! template with a non-zero weight; methods are HTTP tokens; paths start with
//! `/`; no CR or LF anywhere in the request line or headers; a template has at
//! most one of `body` and `json`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

/// How finely the `features` PATCH ratio is expressed in template weights.
pub const RATIO_WEIGHT_SCALE: u32 = 1_000_000;
/// The experimental feature the `features` workload toggles.
pub const FEATURES_TOGGLED_FLAG: &str = "metrics";
/// The largest workload file read.
pub const WORKLOAD_FILE_BYTES_MAX: u64 = 16 * 1024 * 1024;

fn default_weight() -> u32 {
    1
}

/// One kind of request, as written in a workload file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestTemplate {
    /// A label for the report; defaults to `METHOD path`.
    #[serde(default)]
    pub name: Option<String>,
    /// The request method, e.g. `GET`.
    pub method: String,
    /// The origin-form path (with query), appended to the target's prefix.
    pub path: String,
    /// Extra headers; `Host`, `Authorization` and `Content-Type` given here
    /// replace the driver's defaults.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A raw body.
    #[serde(default)]
    pub body: Option<String>,
    /// A JSON body (sent with `Content-Type: application/json`).
    #[serde(default)]
    pub json: Option<serde_json::Value>,
    /// The relative frequency of this template.
    #[serde(default = "default_weight")]
    pub weight: u32,
}

impl RequestTemplate {
    /// A template with no headers and no body, weight 1.
    pub fn new(method: &str, path: &str) -> RequestTemplate {
        RequestTemplate {
            name: None,
            method: method.to_string(),
            path: path.to_string(),
            headers: BTreeMap::new(),
            body: None,
            json: None,
            weight: 1,
        }
    }

    /// The label used in reports.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{} {}", self.method, self.path))
    }

    /// The body bytes to send, if any.
    pub fn body_bytes(&self) -> Option<Vec<u8>> {
        match (&self.body, &self.json) {
            (Some(body), _) => Some(body.clone().into_bytes()),
            (None, Some(json)) => Some(json.to_string().into_bytes()),
            (None, None) => None,
        }
    }
}

/// A validated, weighted list of templates.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The workload's name, for the report.
    pub name: String,
    /// The templates, each with a non-zero weight.
    pub templates: Vec<RequestTemplate>,
}

/// Why a workload cannot be used.
#[derive(Debug)]
pub enum WorkloadError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The file is larger than `WORKLOAD_FILE_BYTES_MAX`.
    TooLarge(u64),
    /// The file does not parse.
    Syntax(String),
    /// The content breaks an invariant of `Workload`.
    Invalid(String),
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::Io(error) => write!(formatter, "cannot read workload file: {error}"),
            WorkloadError::TooLarge(bytes) => write!(
                formatter,
                "workload file has {bytes} bytes, more than {WORKLOAD_FILE_BYTES_MAX}"
            ),
            WorkloadError::Syntax(detail) => write!(formatter, "workload file: {detail}"),
            WorkloadError::Invalid(detail) => write!(formatter, "invalid workload: {detail}"),
        }
    }
}

impl std::error::Error for WorkloadError {}

/// The shape of a workload file: `[[request]]` tables in TOML, or
/// `{"requests": [...]}` in JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    #[serde(rename = "requests", alias = "request")]
    requests: Vec<RequestTemplate>,
}

impl Workload {
    /// Validates `templates` and drops those of weight zero.
    pub fn new(name: &str, templates: Vec<RequestTemplate>) -> Result<Workload, WorkloadError> {
        let templates: Vec<RequestTemplate> = templates
            .into_iter()
            .filter(|template| template.weight > 0)
            .collect();
        if templates.is_empty() {
            return Err(WorkloadError::Invalid(
                "no request template with a non-zero weight".to_string(),
            ));
        }
        for template in &templates {
            validate_template(template).map_err(WorkloadError::Invalid)?;
        }
        Ok(Workload {
            name: name.to_string(),
            templates,
        })
    }

    /// `GET /health`.
    pub fn health() -> Workload {
        Workload {
            name: "health".to_string(),
            templates: vec![RequestTemplate::new("GET", "/health")],
        }
    }

    /// `GET /experimental-features` mixed with PATCHes that set
    /// `FEATURES_TOGGLED_FLAG` to true and to false in equal shares;
    /// `patch_ratio` (0..=1) is the share of PATCH requests.
    pub fn features(patch_ratio: f64) -> Result<Workload, WorkloadError> {
        if !(0.0..=1.0).contains(&patch_ratio) {
            return Err(WorkloadError::Invalid(format!(
                "PATCH ratio {patch_ratio} is not between 0 and 1"
            )));
        }
        let patch_weight = (patch_ratio * f64::from(RATIO_WEIGHT_SCALE)).round() as u32;
        let mut get = RequestTemplate::new("GET", "/experimental-features");
        get.weight = RATIO_WEIGHT_SCALE - patch_weight;
        let mut templates = vec![get];
        for enabled in [true, false] {
            let mut patch = RequestTemplate::new("PATCH", "/experimental-features");
            patch.name = Some(format!(
                "PATCH /experimental-features {FEATURES_TOGGLED_FLAG}={enabled}"
            ));
            patch.json = Some(serde_json::json!({ FEATURES_TOGGLED_FLAG: enabled }));
            patch.weight = patch_weight / 2 + u32::from(enabled) * (patch_weight % 2);
            templates.push(patch);
        }
        Workload::new("features", templates)
    }

    /// Reads a workload file: `.json` is JSON, anything else TOML.
    pub fn from_file(path: &Path) -> Result<Workload, WorkloadError> {
        let bytes = std::fs::metadata(path).map_err(WorkloadError::Io)?.len();
        if bytes > WORKLOAD_FILE_BYTES_MAX {
            return Err(WorkloadError::TooLarge(bytes));
        }
        let text = std::fs::read_to_string(path).map_err(WorkloadError::Io)?;
        let is_json = path
            .extension()
            .is_some_and(|extension| extension == "json");
        let name = path
            .file_stem()
            .map_or("custom".to_string(), |stem| stem.to_string_lossy().into());
        Workload::from_text(&name, &text, is_json)
    }

    /// Parses workload text, JSON when `is_json`, TOML otherwise.
    pub fn from_text(name: &str, text: &str, is_json: bool) -> Result<Workload, WorkloadError> {
        let file: WorkloadFile = if is_json {
            serde_json::from_str(text).map_err(|error| WorkloadError::Syntax(error.to_string()))?
        } else {
            toml::from_str(text).map_err(|error| WorkloadError::Syntax(error.to_string()))?
        };
        Workload::new(name, file.requests)
    }

    /// The weights of the templates, in order.
    pub fn weights(&self) -> Vec<u32> {
        self.templates
            .iter()
            .map(|template| template.weight)
            .collect()
    }
}

/// Checks one template against the invariants in the module doc.
fn validate_template(template: &RequestTemplate) -> Result<(), String> {
    let label = template.label();
    let is_token_char =
        |byte: u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
    if template.method.is_empty() || !template.method.bytes().all(is_token_char) {
        return Err(format!("`{label}`: method is not an HTTP token"));
    }
    if !template.path.starts_with('/')
        || template
            .path
            .bytes()
            .any(|byte| byte <= b' ' || byte == 0x7F)
    {
        return Err(format!(
            "`{label}`: path must start with `/` and contain no spaces or controls"
        ));
    }
    for (name, value) in &template.headers {
        if name.is_empty() || !name.bytes().all(is_token_char) {
            return Err(format!(
                "`{label}`: header name `{name}` is not an HTTP token"
            ));
        }
        if value.bytes().any(|byte| byte == b'\r' || byte == b'\n') {
            return Err(format!("`{label}`: header `{name}` contains CR or LF"));
        }
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            return Err(format!(
                "`{label}`: header `{name}` is computed by the driver"
            ));
        }
    }
    if template.body.is_some() && template.json.is_some() {
        return Err(format!("`{label}`: give `body` or `json`, not both"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn toml_workload_file_parses_with_defaults() {
        let text = r#"
            [[request]]
            method = "POST"
            path = "/indexes/movies/search"
            weight = 3
            json = { q = "batman" }

            [[request]]
            name = "stats"
            method = "GET"
            path = "/stats"
            headers = { "X-Trace" = "1" }
        "#;
        let workload = Workload::from_text("movies", text, false).expect("from_text succeeds");
        assert_eq!(workload.weights(), vec![3, 1]);
        assert_eq!(
            workload.templates[0]
                .body_bytes()
                .expect("body_bytes succeeds"),
            br#"{"q":"batman"}"#.to_vec()
        );
        assert_eq!(workload.templates[1].label(), "stats");
        assert_eq!(workload.templates[1].headers["X-Trace"], "1");
    }

    #[test]
    fn json_workload_file_parses() {
        let text = r#"{"requests": [{"method": "GET", "path": "/health", "weight": 2}]}"#;
        let workload = Workload::from_text("h", text, true).expect("from_text succeeds");
        assert_eq!(workload.templates.len(), 1);
        assert_eq!(workload.templates[0].label(), "GET /health");
    }

    #[test]
    fn unknown_fields_and_broken_templates_are_rejected() {
        let unknown = r#"{"requests": [{"method": "GET", "path": "/", "wieght": 2}]}"#;
        assert!(matches!(
            Workload::from_text("x", unknown, true),
            Err(WorkloadError::Syntax(_))
        ));
        let bad_path = r#"{"requests": [{"method": "GET", "path": "health"}]}"#;
        assert!(matches!(
            Workload::from_text("x", bad_path, true),
            Err(WorkloadError::Invalid(_))
        ));
        let injected =
            r#"{"requests": [{"method": "GET", "path": "/", "headers": {"A": "b\r\nC: d"}}]}"#;
        assert!(matches!(
            Workload::from_text("x", injected, true),
            Err(WorkloadError::Invalid(_))
        ));
        let zero = r#"{"requests": [{"method": "GET", "path": "/", "weight": 0}]}"#;
        assert!(matches!(
            Workload::from_text("x", zero, true),
            Err(WorkloadError::Invalid(_))
        ));
    }

    #[test]
    fn features_ratio_sets_patch_share_and_toggles_both_ways() {
        let workload = Workload::features(0.25).expect("features succeeds");
        let total: u32 = workload.weights().iter().sum();
        assert_eq!(total, RATIO_WEIGHT_SCALE);
        let patch: Vec<&RequestTemplate> = workload
            .templates
            .iter()
            .filter(|template| template.method == "PATCH")
            .collect();
        assert_eq!(patch.len(), 2);
        assert_eq!(
            patch.iter().map(|template| template.weight).sum::<u32>(),
            RATIO_WEIGHT_SCALE / 4
        );
        let bodies: Vec<String> = patch
            .iter()
            .map(|template| {
                String::from_utf8(template.body_bytes().expect("body_bytes succeeds"))
                    .expect("from_utf8 succeeds")
            })
            .collect();
        assert!(bodies.contains(&r#"{"metrics":true}"#.to_string()));
        assert!(bodies.contains(&r#"{"metrics":false}"#.to_string()));
        assert_eq!(
            Workload::features(0.0)
                .expect("features succeeds")
                .templates
                .len(),
            1
        );
        assert!(Workload::features(1.5).is_err());
    }
}
