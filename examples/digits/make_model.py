"""Train a small digit classifier and write it as a float32 .tflite with microcompile's own writer.

The data is scikit-learn's bundled 8x8 digits set (no download). The network is
  input 1x64 -> FULLY_CONNECTED 32 + RELU -> FULLY_CONNECTED 10 -> SOFTMAX
trained with plain numpy (Adam, full batch, fixed seed), so the file is byte-for-byte
reproducible. It also writes a held-out test sample as .npy for `deploy --input`.

    python examples/digits/make_model.py -o build/digits
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np

from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor, verify


def load_digits_split(seed: int = 0):
    from sklearn.datasets import load_digits  # the data ships inside scikit-learn

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    cut = int(0.8 * len(x))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def train(x, y, hidden=32, epochs=400, lr=0.01, seed=0):
    rng = np.random.default_rng(seed)
    params = {"w1": rng.normal(0, np.sqrt(2 / 64), (64, hidden)), "b1": np.zeros(hidden),
              "w2": rng.normal(0, np.sqrt(2 / hidden), (hidden, 10)), "b2": np.zeros(10)}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    onehot = np.eye(10)[y]
    for step in range(1, epochs + 1):
        h = np.maximum(x @ params["w1"] + params["b1"], 0)
        logits = h @ params["w2"] + params["b2"]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        d_logits = (p - onehot) / len(x)
        d_h = (d_logits @ params["w2"].T) * (h > 0)
        grads = {"w2": h.T @ d_logits, "b2": d_logits.sum(0), "w1": x.T @ d_h, "b1": d_h.sum(0)}
        for k in params:   # Adam
            m[k] = 0.9 * m[k] + 0.1 * grads[k]
            v[k] = 0.999 * v[k] + 0.001 * grads[k] ** 2
            params[k] -= lr * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)
    return {k: p.astype(np.float32) for k, p in params.items()}


def predict(params, x):
    h = np.maximum(x @ params["w1"] + params["b1"], 0)
    return (h @ params["w2"] + params["b2"]).argmax(1)


def build_graph(params) -> Graph:
    f32 = lambda name, shape, data=None: Tensor(name, shape, "float32", data=data)
    hidden = params["w1"].shape[1]
    tensors = [f32("pixels", (1, 64)), f32("hidden", (1, hidden)), f32("logits", (1, 10)), f32("probs", (1, 10)),
               # TFLite stores FULLY_CONNECTED weights as [units, depth].
               f32("fc1/weights", (hidden, 64), np.ascontiguousarray(params["w1"].T)),
               f32("fc1/bias", (hidden,), params["b1"]),
               f32("fc2/weights", (10, hidden), np.ascontiguousarray(params["w2"].T)),
               f32("fc2/bias", (10,), params["b2"])]
    nodes = (Node("fully_connected", "fc1", ("pixels", "fc1/weights", "fc1/bias"), ("hidden",), {"activation": "RELU"}),
             Node("fully_connected", "fc2", ("hidden", "fc2/weights", "fc2/bias"), ("logits",), {"activation": "NONE"}),
             Node("softmax", "softmax", ("logits",), ("probs",), {"beta": 1.0}))
    return verify(Graph("digits_mlp", {t.name: t for t in tensors}, nodes, ("pixels",), ("probs",)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out-dir", default="build/digits", type=pathlib.Path)
    args = ap.parse_args(argv)
    (xtr, ytr), (xte, yte) = load_digits_split()
    params = train(xtr, ytr)
    accuracy = float((predict(params, xte) == yte).mean())
    args.out_dir.mkdir(parents=True, exist_ok=True)
    model = args.out_dir / "digits_mlp.tflite"
    model.write_bytes(write_tflite(build_graph(params)))
    np.save(args.out_dir / "sample.npy", xte[:1].reshape(1, 64))
    print(f"wrote {model} (float32 MLP, test accuracy {accuracy:.1%} on {len(xte)} held-out digits); "
          f"sample input {args.out_dir / 'sample.npy'} is a '{yte[0]}'")


if __name__ == "__main__":
    main()
