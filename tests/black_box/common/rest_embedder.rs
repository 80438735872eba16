//! A `rest` embedder served by a small HTTP server a test starts on a loopback port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};

/// The embedding of a text: three small counts, so that texts about the same letters are
/// close.
pub fn embedding_of(text: &str) -> Vec<f32> {
    let count = |letter: char| text.chars().filter(|c| *c == letter).count() as f32;
    vec![count('a') + 0.5, count('e') + 0.5, count('o') + 0.5]
}

/// A REST embedder on a loopback port: `{"input": text}` → `{"embedding": [...]}`; answers
/// 500 while `failing` is set. Counts the texts it embedded.
pub struct Embedder {
    pub address: SocketAddr,
    pub failing: Arc<AtomicBool>,
    pub texts: Arc<AtomicUsize>,
}

impl Embedder {
    pub fn start() -> Embedder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let failing = Arc::new(AtomicBool::new(false));
        let texts = Arc::new(AtomicUsize::new(0));
        let (fail, count) = (failing.clone(), texts.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (fail, count) = (fail.clone(), count.clone());
                std::thread::spawn(move || serve(stream, &fail, &count));
            }
        });
        Embedder {
            address,
            failing,
            texts,
        }
    }

    /// The embedder's settings: it embeds each document's `title`.
    pub fn settings(&self) -> Value {
        json!({
            "source": "rest",
            "url": format!("http://{}/embed", self.address),
            "request": {"input": "{{text}}"},
            "response": {"embedding": "{{embedding}}"},
            "documentTemplate": "{{doc.title}}",
        })
    }
}

/// Answers the requests of one keep-alive connection.
fn serve(stream: TcpStream, failing: &AtomicBool, texts: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().expect("a connected stream clones"));
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value
                    .trim()
                    .parse()
                    .expect("the server sends a numeric Content-Length");
            }
        }
        let mut body = vec![0; length];
        reader
            .read_exact(&mut body)
            .expect("the server sends the body it announced");
        let request: Value =
            serde_json::from_slice(&body).expect("the server sends JSON to the embedder");
        let (status, answer) = if failing.load(Ordering::SeqCst) {
            (
                "500 Internal Server Error",
                json!({"error": "the model is down"}),
            )
        } else {
            texts.fetch_add(1, Ordering::SeqCst);
            let text = request["input"].as_str().unwrap_or_default();
            ("200 OK", json!({"embedding": embedding_of(text)}))
        };
        let answer = answer.to_string();
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
