//! A tiny static file server on a thread of the test: a fixed map of paths to bodies on a
//! free loopback port, so that a page the test writes is served from an origin of its own
//! (a page on another origin than coresearch, as a real front end is).
//!
//! Invariants: it answers `GET` of a known path 200 with its content type, anything else
//! 404; every answer closes its connection; the thread ends with the test process.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// How long the server waits for a request's head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One file served: its content type and body.
pub struct File {
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// Serves `files` (path → file) on a free loopback port; answers the address.
pub fn serve(files: HashMap<String, File>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind succeeds");
    let address = listener.local_addr().expect("local_addr succeeds");
    let files = Arc::new(files);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let files = Arc::clone(&files);
            std::thread::spawn(move || answer(stream, &files));
        }
    });
    address
}

fn answer(stream: TcpStream, files: &HashMap<String, File>) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // The rest of the head: nothing in it changes the answer.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|read| read > 2) {
        line.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next(), parts.next().unwrap_or("/"));
    let path = target.split('?').next().unwrap_or(target);
    let mut stream = &stream;
    let head = |status: &str, content_type: &str, length: usize| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {length}\r\n\
             cache-control: no-store\r\nconnection: close\r\n\r\n"
        )
    };
    let _ = match (method, files.get(path)) {
        (Some("GET"), Some(file)) => stream
            .write_all(head("200 OK", file.content_type, file.body.len()).as_bytes())
            .and_then(|()| stream.write_all(&file.body)),
        _ => stream.write_all(head("404 Not Found", "text/plain", 0).as_bytes()),
    };
}
