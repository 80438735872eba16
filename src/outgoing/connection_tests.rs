//! The client's connections against real servers on std threads: https (rustls with a
//! certificate made for the test), a gzip answer, and keep-alive reuse of a connection
//! (and its replacement once the server closed it).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use futures_rustls::rustls;
use rcgen::{CertificateParams, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::*;

/// A certificate for `localhost` and its key.
fn certificate() -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = KeyPair::generate().expect("key");
    let certificate = CertificateParams::new(vec!["localhost".to_owned()])
        .expect("params")
        .self_signed(&key)
        .expect("signed");
    let key = PrivateKeyDer::try_from(key.serialize_der()).expect("key der");
    (certificate.der().clone(), key)
}

/// Serves one connection over TLS, answering `answer`; joining gives the request head
/// (or the handshake error).
fn serve_tls(
    certificate: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    answer: &'static [u8],
) -> (SocketAddr, JoinHandle<String>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key)
        .expect("config");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let handle = std::thread::spawn(move || {
        let (socket, _) = listener.accept().expect("accept");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let connection = rustls::ServerConnection::new(Arc::new(config)).expect("connection");
        let mut stream = rustls::StreamOwned::new(connection, socket);
        let mut received = Vec::new();
        let mut buffer = [0u8; 4096];
        while !received.windows(4).any(|window| window == b"\r\n\r\n") {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(count) => received.extend_from_slice(&buffer[..count]),
                Err(error) => return format!("error: {error}"),
            }
        }
        let _ = stream.write_all(answer);
        stream.conn.send_close_notify();
        let _ = stream.flush();
        String::from_utf8_lossy(&received).into_owned()
    });
    (address, handle)
}

/// Sends a GET to `url` from a fresh core, trusting `root` when given.
fn get(
    url: String,
    root: Option<CertificateDer<'static>>,
) -> Result<OutgoingResponse, OutgoingError> {
    crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let mut client =
            OutgoingClient::new(IpPolicy::allow_all(), readiness).with_options(SendOptions {
                max_attempts: 1,
                request_timeout: Duration::from_secs(5),
                ..SendOptions::default()
            });
        if let Some(root) = root {
            client = client.with_extra_roots(&[root]).expect("roots");
        }
        let request = OutgoingRequest::new(Method::Get, &url).expect("valid");
        client.send(request).await
    })
}

#[test]
fn an_https_request_round_trips_with_a_trusted_certificate() {
    let (certificate, key) = certificate();
    let (address, server) = serve_tls(
        certificate.clone(),
        key,
        b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure",
    );
    let url = format!("https://localhost:{}/path", address.port());
    let response = get(url, Some(certificate)).expect("a response");
    assert_eq!(
        (response.status, response.body.as_slice()),
        (200, &b"secure"[..])
    );
    let head = server.join().expect("server");
    assert!(head.starts_with("GET /path HTTP/1.1\r\n"), "{head}");
}

#[test]
fn an_untrusted_certificate_is_refused() {
    let (certificate, key) = certificate();
    let (address, server) = serve_tls(certificate, key, b"HTTP/1.1 200 OK\r\n\r\n");
    let url = format!("https://localhost:{}/", address.port());
    let error = get(url, None).expect_err("untrusted");
    assert!(matches!(error, OutgoingError::Tls { .. }), "{error:?}");
    assert!(error.to_string().contains("UnknownIssuer"), "{error}");
    server.join().expect("server");
}

#[test]
fn a_gzip_answer_is_decoded() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let server = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().expect("accept");
        let mut buffer = [0u8; 4096];
        let _ = socket.read(&mut buffer);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(b"{\"embedding\":[1,2]}").expect("write");
        let body = encoder.finish().expect("finish");
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let _ = socket.write_all(head.as_bytes());
        let _ = socket.write_all(&body);
    });
    let response = get(format!("http://{address}/"), None).expect("a response");
    assert_eq!(response.body, b"{\"embedding\":[1,2]}");
    server.join().expect("server");
}

/// Answers every request on each accepted connection with a body naming the connection
/// and the request's rank on it; joining gives how many connections were accepted.
fn serve_keep_alive(connections: usize) -> (SocketAddr, JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let handle = std::thread::spawn(move || {
        for connection in 0..connections {
            let Ok((mut socket, _)) = listener.accept() else {
                return connection;
            };
            socket
                .set_read_timeout(Some(Duration::from_millis(500)))
                .expect("timeout");
            let mut rank = 0;
            let mut buffer = [0u8; 4096];
            while let Ok(count) = socket.read(&mut buffer) {
                if count == 0 {
                    break;
                }
                let body = format!("{connection}.{rank}");
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes());
                rank += 1;
            }
        }
        connections
    });
    (address, handle)
}

#[test]
fn a_kept_alive_connection_carries_the_next_requests() {
    let (address, server) = serve_keep_alive(1);
    let bodies = crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let client = OutgoingClient::new(IpPolicy::allow_all(), readiness);
        let mut bodies = Vec::new();
        for _ in 0..3 {
            let request =
                OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
            let response = client.send(request).await.expect("a response");
            bodies.push(String::from_utf8(response.body).expect("text"));
        }
        bodies
    });
    assert_eq!(bodies, ["0.0", "0.1", "0.2"]);
    assert_eq!(server.join().expect("server"), 1);
}

#[test]
fn a_pooled_connection_the_server_closed_is_replaced() {
    let (address, server) = serve_keep_alive(2);
    let bodies = crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let client = OutgoingClient::new(IpPolicy::allow_all(), readiness);
        let mut bodies = Vec::new();
        for pause in [0, 800] {
            // The server gives up on an idle connection after 500 ms.
            crate::runtime::sleep(Duration::from_millis(pause)).await;
            let request =
                OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
            let response = client.send(request).await.expect("a response");
            bodies.push(String::from_utf8(response.body).expect("text"));
        }
        bodies
    });
    assert_eq!(bodies, ["0.0", "1.0"]);
    assert_eq!(server.join().expect("server"), 2);
}
