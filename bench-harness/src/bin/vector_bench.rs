//! `vector_bench`: the vector store against brute force and hnswlib on the same data
//! (synthetic clusters or vectors read from files) — build time, recall@10 against queries per
//! second for several beam widths (hot), cold-start latency with and without prefetch, binary
//! quantization with and without re-scoring, filtered search at 1 % and 10 %, merge cost, bytes
//! per vector, kernel speed.
//!
//! Usage: `vector_bench --dataset clustered-384|clustered-128|files:DIR [--vectors N]
//! [--queries N] [--dimensions N] [--work DIR] [--hnswlib-script PATH] [--model true]
//! [--cold false] [--quantized false] [--hot-rounds N] [--sketch false] [--full-precision false]`.
//! `--dataset files:DIR` reads `vectors.f32`, `queries.f32` and `extra.f32` (little-endian
//! float32 rows, as `scripts/minilm_embed.py` writes them: MiniLM embeddings of PyPI package
//! summaries) from DIR: the first `--vectors N` vectors (default all), the first `--queries N`
//! queries and 1 % of N extra vectors for the merge; rows of `--dimensions N` values, by default
//! the `dimensions` field of DIR/source.json. Ground truth is brute force as for the
//! synthetic sets.
//! `--full-precision false` skips the full-precision graph (its hot, filtered, merge and cold
//! rows): only hnswlib (if asked) and the binary-quantized graph run.
//! `--sketch false` opens the full-precision graph for the hot and filtered rows without the
//! readers' distance sketch (`GraphOptions::distance_sketch`).
//! With `--hot-rounds N` only the hot sweep (N rounds) and the filtered rows run, on the store
//! an earlier such run left in `--work` (built when absent): the A/B mode.
//! Prints a Markdown report on stdout.

#[path = "../vector/mod.rs"]
mod vector;

fn main() -> std::process::ExitCode {
    match vector::run(std::env::args().skip(1).collect()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("vector_bench: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
