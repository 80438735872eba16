//! A Hugging Face hub on a loopback port, answering as huggingface.co does for the files a
//! `huggingFace` embedder fetches: `GET /{org}/{name}/resolve/{revision}/{file}` with
//! `X-Repo-Commit` and `ETag`; an LFS file (the weights) answered with a 302 to the hub's
//! own `/cdn/{sha256}` and `X-Linked-Etag` (the sha256, quoted) and `X-Linked-Size`;
//! `Range: bytes=N-` and `bytes=N-M` honoured with 206 and `Content-Range`; an unknown
//! repository answered 401 (the real hub hides private repositories so), an unknown
//! revision or file 404, with the hub's `X-Error-Code`. Every request is recorded. Faults a
//! test sets: a file whose body is cut halfway (once, or every time) with the connection
//! closed, or served with one byte changed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

/// The commit every revision the hub knows resolves to.
pub const COMMIT: &str = "c0ffee0123456789abcdef0123456789abcdef01";
/// The branch the hub knows besides [`COMMIT`].
const BRANCH: &str = "main";
/// The files a sentence-transformers model repository holds that the embedder fetches.
pub const MODEL_FILES: [&str; 4] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "1_Pooling/config.json",
];
/// The files the hub stores in LFS (and serves through its CDN).
const LFS_FILES: [&str; 2] = ["model.safetensors", "pytorch_model.bin"];

/// One request the hub received: its path and its `Range` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
}

/// What the hub does wrong, by file name.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The next full transfer of this file stops halfway (the connection closes).
    pub cut_once: Option<String>,
    /// Every transfer of this file stops halfway.
    pub cut_always: Option<String>,
    /// This file is served with its first byte changed (its etag stays the true one).
    pub corrupt: Option<String>,
}

/// A file of the repository.
struct File {
    bytes: Vec<u8>,
    sha256: String,
}

struct State {
    model: String,
    files: BTreeMap<String, File>,
    seen: Mutex<Vec<Seen>>,
    faults: Mutex<Faults>,
}

/// The hub, serving one model repository until the test ends.
pub struct Hub {
    address: SocketAddr,
    state: Arc<State>,
}

impl Hub {
    /// A hub holding `model` with `files` (name, bytes).
    pub fn start(model: &str, files: Vec<(String, Vec<u8>)>) -> Hub {
        let files = files
            .into_iter()
            .map(|(name, bytes)| {
                let sha256 = hex::encode(Sha256::digest(&bytes));
                (name, File { bytes, sha256 })
            })
            .collect();
        let state = Arc::new(State {
            model: model.to_owned(),
            files,
            seen: Mutex::new(Vec::new()),
            faults: Mutex::new(Faults::default()),
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let serving = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&serving);
                std::thread::spawn(move || serve(stream, address, &state));
            }
        });
        Hub { address, state }
    }

    /// A hub holding `model` with the [`MODEL_FILES`] of `directory`.
    pub fn serving_directory(model: &str, directory: &Path) -> Hub {
        let files = MODEL_FILES
            .iter()
            .map(|name| {
                let bytes = std::fs::read(directory.join(name)).expect("a packaged file");
                ((*name).to_owned(), bytes)
            })
            .collect();
        Hub::start(model, files)
    }

    /// The value of `HF_ENDPOINT` that names this hub.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.state.seen).clone()
    }

    /// Sets what the hub does wrong from now on.
    pub fn set_faults(&self, faults: Faults) {
        *lock(&self.state.faults) = faults;
    }

    /// The sha256 of `file` (its blob's name in the cache when it is in LFS).
    pub fn sha256(&self, file: &str) -> String {
        self.state.files[file].sha256.clone()
    }

    /// The etag the hub gives `file`: the sha256 for LFS files, else a git-like hash.
    pub fn etag(&self, file: &str) -> String {
        let sha256 = self.sha256(file);
        if LFS_FILES.contains(&file) {
            sha256
        } else {
            sha256[..40].to_owned()
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An answer: status, headers, body, and how many body bytes to send before closing.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    cut_at: Option<usize>,
}

impl Answer {
    fn error(status: u16, code: &str, message: &str) -> Answer {
        Answer {
            status,
            headers: vec![("X-Error-Code".to_owned(), code.to_owned())],
            body: message.as_bytes().to_vec(),
            cut_at: None,
        }
    }
}

/// Reads one request, answers it and closes the connection.
fn serve(stream: TcpStream, address: SocketAddr, state: &State) {
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("range")
        {
            range = Some(value.trim().to_owned());
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    lock(&state.seen).push(Seen {
        path: path.clone(),
        range: range.clone(),
    });
    let answer = answer(state, address, &path, range.as_deref());
    write(stream, answer);
}

/// The answer to `GET path`.
fn answer(state: &State, address: SocketAddr, path: &str, range: Option<&str>) -> Answer {
    if let Some(sha256) = path.strip_prefix("/cdn/") {
        return match state.files.iter().find(|(_, file)| file.sha256 == sha256) {
            Some((name, file)) => content(state, name, file, range, Vec::new()),
            None => Answer::error(404, "EntryNotFound", "Entry not found"),
        };
    }
    let Some((repository, rest)) = path.trim_start_matches('/').split_once("/resolve/") else {
        return Answer::error(404, "EntryNotFound", "Not found");
    };
    if repository != state.model {
        return Answer::error(401, "RepoNotFound", "Repository not found");
    }
    let Some((revision, name)) = rest.split_once('/') else {
        return Answer::error(404, "EntryNotFound", "Entry not found");
    };
    if revision != BRANCH && revision != COMMIT {
        return Answer::error(404, "RevisionNotFound", "Invalid rev id");
    }
    let Some(file) = state.files.get(name) else {
        return Answer::error(404, "EntryNotFound", "Entry not found");
    };
    let mut headers = vec![("X-Repo-Commit".to_owned(), COMMIT.to_owned())];
    if LFS_FILES.contains(&name) {
        headers.extend([
            ("X-Linked-Etag".to_owned(), format!("\"{}\"", file.sha256)),
            ("X-Linked-Size".to_owned(), file.bytes.len().to_string()),
            ("ETag".to_owned(), format!("\"{}\"", &file.sha256[..40])),
            (
                "Location".to_owned(),
                format!("http://{address}/cdn/{}", file.sha256),
            ),
        ]);
        return Answer {
            status: 302,
            headers,
            body: Vec::new(),
            cut_at: None,
        };
    }
    headers.push(("ETag".to_owned(), format!("\"{}\"", &file.sha256[..40])));
    content(state, name, file, range, headers)
}

/// `file`'s bytes for `range`, with the faults set for it.
fn content(
    state: &State,
    name: &str,
    file: &File,
    range: Option<&str>,
    mut headers: Vec<(String, String)>,
) -> Answer {
    let total = file.bytes.len();
    let (start, end) = match range.and_then(parse_range) {
        Some((start, end)) => (start, end.unwrap_or(total - 1).min(total - 1)),
        None => (0, total - 1),
    };
    if start >= total {
        return Answer::error(416, "RangeNotSatisfiable", "Range not satisfiable");
    }
    let mut bytes = file.bytes.clone();
    let mut faults = lock(&state.faults);
    let whole_transfer = end > start;
    if faults.corrupt.as_deref() == Some(name) {
        bytes[0] ^= 0xff;
    }
    let cut = whole_transfer
        && (faults.cut_always.as_deref() == Some(name) || faults.cut_once.as_deref() == Some(name));
    if whole_transfer && faults.cut_once.as_deref() == Some(name) {
        faults.cut_once = None;
    }
    let body = bytes[start..=end].to_vec();
    let status = if range.is_some() {
        headers.push((
            "Content-Range".to_owned(),
            format!("bytes {start}-{end}/{total}"),
        ));
        206
    } else {
        200
    };
    Answer {
        status,
        headers,
        cut_at: cut.then_some(body.len() / 2),
        body,
    }
}

/// `bytes=N-` or `bytes=N-M`.
fn parse_range(range: &str) -> Option<(usize, Option<usize>)> {
    let (start, end) = range.strip_prefix("bytes=")?.split_once('-')?;
    Some((start.parse().ok()?, end.parse().ok()))
}

/// Writes `answer` (its body cut where it says) and closes the connection.
fn write(mut stream: TcpStream, answer: Answer) {
    let reason = match answer.status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        401 => "Unauthorized",
        416 => "Range Not Satisfiable",
        _ => "Not Found",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n",
        answer.status,
        answer.body.len()
    );
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let sent = answer.cut_at.unwrap_or(answer.body.len());
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&answer.body[..sent]);
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}
