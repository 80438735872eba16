//! Property: however the bytes of a pipelined conversation are split across reads, the
//! handler sees the same requests and the answers are the same.
//!
//! Seeded and deterministic; `HTTP_SPLIT_READS_CASES` raises the case count.

use std::io::Write;

use super::*;

const DEFAULT_CASES: u64 = 64;
const READ_SIZE_MAX: usize = 64;

/// xorshift64*: small, deterministic, good enough to pick read sizes.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn conversation() -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(b"{\"compressed\":true}")
        .expect("write_all succeeds");
    let gzipped = gzip.finish().expect("finish succeeds");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"GET /one/?a=1 HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
    bytes.extend_from_slice(b"POST /two HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world");
    bytes.extend_from_slice(
        b"PUT /three HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\n",
    );
    bytes.extend_from_slice(
        format!(
            "POST /four HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
            gzipped.len()
        )
        .as_bytes(),
    );
    bytes.extend_from_slice(&gzipped);
    bytes.extend_from_slice(
        b"OPTIONS /five HTTP/1.1\r\nOrigin: http://a\r\nAccess-Control-Request-Method: PUT\r\n\r\n",
    );
    bytes.extend_from_slice(b"HEAD /large/40 HTTP/1.1\r\nConnection: close\r\n\r\n");
    let expected = vec![
        ("/one".to_string(), Vec::new()),
        ("/two".to_string(), b"hello world".to_vec()),
        ("/three".to_string(), b"abc0123456789abcdef".to_vec()),
        ("/four".to_string(), b"{\"compressed\":true}".to_vec()),
        ("/large/40".to_string(), Vec::new()),
    ];
    (bytes, expected)
}

#[test]
fn answers_do_not_depend_on_how_reads_are_split() {
    let cases = std::env::var("HTTP_SPLIT_READS_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let seed = 0x5eed_0001_u64;
    println!("seed {seed:#x}, {cases} cases");
    let (bytes, expected) = conversation();
    let reference = {
        let handler = RecordingHandler::default();
        serve(vec![Step::Send(bytes.clone())], &handler).output
    };
    let reference_answers = parse_answers(&reference, &[5]);
    assert_eq!(reference_answers.len(), 6);
    let mut random = Random(seed);
    for case in 0..cases {
        let sizes: Vec<usize> = (0..16)
            .map(|_| 1 + (random.next() % READ_SIZE_MAX as u64) as usize)
            .collect();
        let handler = RecordingHandler::default();
        let mut stream = MockStream::new(vec![Step::Send(bytes.clone())]);
        stream.read_sizes = sizes.clone();
        let served = serve_stream(
            stream,
            &HttpLimits::default(),
            &handler,
            &NeverTimer,
            &ShutdownSignal::new(),
        );
        let seen: Vec<(String, Vec<u8>)> = handler
            .seen
            .borrow()
            .iter()
            .map(|seen| {
                (
                    seen.path.clone(),
                    seen.body.clone().expect("clone succeeds"),
                )
            })
            .collect();
        assert_eq!(seen, expected, "case {case}, read sizes {sizes:?}");
        let answers = parse_answers(&served.output, &[5]);
        let statuses: Vec<u16> = answers.iter().map(|answer| answer.status).collect();
        let reference_statuses: Vec<u16> = reference_answers
            .iter()
            .map(|answer| answer.status)
            .collect();
        assert_eq!(
            statuses, reference_statuses,
            "case {case}, read sizes {sizes:?}"
        );
        let bodies: Vec<&Vec<u8>> = answers.iter().map(|answer| &answer.body).collect();
        let reference_bodies: Vec<&Vec<u8>> = reference_answers
            .iter()
            .map(|answer| &answer.body)
            .collect();
        assert_eq!(
            bodies, reference_bodies,
            "case {case}, read sizes {sizes:?}"
        );
    }
}
