"""The reference embedding of a sentence by a BERT sentence-transformers model, computed
independently of the server: the model's own tokenizer (the `tokenizers` package that
sentence-transformers uses) and a plain numpy forward pass of BERT read straight from
`model.safetensors`, mean pooled over the attention mask and L2-normalized as
sentence-transformers' Transformer -> Pooling -> Normalize modules do.

Usage: reference.py MODEL_DIRECTORY SENTENCE  (prints the vector as a JSON array)
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

DTYPES = {"F32": np.float32, "I64": np.int64}


def load_weights(path):
    data = Path(path).read_bytes()
    header_length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + header_length])
    body = data[8 + header_length :]
    weights = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=DTYPES[info["dtype"]])
        weights[name] = array.reshape(info["shape"]).astype(np.float64)
    return weights


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight + bias


def dense(w, prefix, x):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def embed(directory, sentence):
    config = json.loads((directory / "config.json").read_text())
    w = load_weights(directory / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()  # one sentence: no padding, so every token is attended and pooled
    ids = np.array(tokenizer.encode(sentence).ids)
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][: len(ids)]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        split = lambda t: t.reshape(len(ids), heads, -1).transpose(1, 0, 2)
        q = split(dense(w, p + "attention.self.query", x))
        k = split(dense(w, p + "attention.self.key", x))
        v = split(dense(w, p + "attention.self.value", x))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(len(ids), -1)
        attention = dense(w, p + "attention.output.dense", context)
        x = layer_norm(attention + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        inner = gelu(dense(w, p + "intermediate.dense", x))
        x = layer_norm(dense(w, p + "output.dense", inner) + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


if __name__ == "__main__":
    print(json.dumps([float(value) for value in embed(Path(sys.argv[1]), sys.argv[2])]))
