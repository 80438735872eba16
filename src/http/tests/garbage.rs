//! Property: mutated and random input never panics the connection, always ends, and every
//! byte written is a well-formed sequence of answers.
//!
//! Seeded and deterministic; `HTTP_GARBAGE_CASES` raises the case count.

use super::*;

const DEFAULT_CASES: u64 = 200;
const MUTATIONS_MAX: u64 = 8;

/// xorshift64*.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

const SEED_CONVERSATION: &[u8] = b"POST /a?x=1 HTTP/1.1\r\nContent-Length: 5\r\nAccept-Encoding: gzip;q=0.5, br\r\n\r\nhelloPUT /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n4\r\nwxyz\r\n0\r\n\r\nOPTIONS / HTTP/1.1\r\nAccess-Control-Request-Method: GET\r\nOrigin: o\r\n\r\nGET /large/3000 HTTP/1.0\r\nConnection: keep-alive\r\nAccept-Encoding: deflate\r\n\r\n";

fn mutate(random: &mut Random, bytes: &mut Vec<u8>) {
    const INTERESTING: &[u8] = b"\r\n:; \t0123456789abcdefABCDEF-,\x00\xff";
    for _ in 0..=random.below(MUTATIONS_MAX as usize) {
        let position = random.below(bytes.len() + 1);
        match random.below(4) {
            0 if position < bytes.len() => {
                bytes.remove(position);
            }
            1 if position < bytes.len() => {
                bytes[position] = INTERESTING[random.below(INTERESTING.len())];
            }
            2 => bytes.insert(position, INTERESTING[random.below(INTERESTING.len())]),
            _ => {
                let end = (position + random.below(16)).min(bytes.len());
                let copy: Vec<u8> = bytes[position..end].to_vec();
                let at = random.below(bytes.len() + 1);
                bytes.splice(at..at, copy);
            }
        }
    }
}

#[test]
fn mutated_input_never_breaks_the_connection() {
    let cases = std::env::var("HTTP_GARBAGE_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let seed = 0x6a7b_a6e5_u64;
    println!("seed {seed:#x}, {cases} cases");
    let mut random = Random(seed);
    let limits = HttpLimits {
        payload_bytes_max: 64,
        header_count_max: 8,
        header_bytes_max: 512,
        uri_bytes_max: 64,
        ..HttpLimits::default()
    };
    for case in 0..cases {
        let mut bytes = SEED_CONVERSATION.to_vec();
        if case % 10 == 9 {
            bytes = (0..random.below(300))
                .map(|_| random.next() as u8)
                .collect();
        } else {
            mutate(&mut random, &mut bytes);
        }
        let mut stream = MockStream::new(vec![Step::Send(bytes.clone())]);
        stream.read_sizes = vec![1 + random.below(40), 1 + random.below(400)];
        let handler = RecordingHandler::default();
        let served = serve_stream(
            stream,
            &limits,
            &handler,
            &InstantTimer::default(),
            &ShutdownSignal::new(),
        );
        let summary = served.summary();
        let head_indexes: Vec<usize> = Vec::new();
        let answers = parse_answers(&served.output, &head_indexes);
        let final_answers = answers.iter().filter(|answer| answer.status >= 200).count();
        assert!(
            final_answers as u64 >= summary.requests,
            "case {case}: {} answers for {} requests, input {:?}",
            final_answers,
            summary.requests,
            String::from_utf8_lossy(&bytes)
        );
    }
}
