"""Search strategies over one workload's knob space.

    "random"  uniform over the points not tried yet
    "model"   (default) evolutionary search guided by a cost model, and seeded by the best
              points of the other workloads of the same family (`hint`: kws's two identical
              3x3 convolutions that differ only in their activation find each other's block
              size at once): a ridge regression on
              one-hot knob features and their pairwise products, fitted on log(count) of the
              measurements so far (numpy only). Each proposal mutates the best points found
              (one or two knobs changed) plus a few random points, and takes the candidate
              the model predicts fastest; one proposal in EXPLORE is random, so the model
              keeps learning. Until MIN_FIT measurements exist it proposes random points.

A search never proposes a point twice (invalid and failed points included) and says when its
space is exhausted (`propose` returns None). The first proposal is the default point.
"""

from __future__ import annotations

import json
import math

import numpy as np

STRATEGIES = ("model", "random")
MIN_FIT = 4
EXPLORE = 5           # one proposal in EXPLORE is random
POOL = 64             # candidates scored per proposal
RIDGE = 1e-2


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


class RandomSearch:
    def __init__(self, space, default: dict, seed: int = 0):
        self.space, self.default = space, dict(default)
        self.rng = np.random.default_rng(seed)
        self.seen: set[str] = set()
        self.results: list[tuple[dict, float | None]] = []    # (config, count or None when it failed)

    def mark_seen(self, config: dict) -> None:
        """A point about to be measured: not proposed again."""
        self.seen.add(_key(config))

    def tell(self, config: dict, count: float | None) -> None:
        """A point was tried: its count, or None (invalid, failed)."""
        self.seen.add(_key(config))
        self.results.append((dict(config), count))

    @property
    def exhausted(self) -> bool:
        return len(self.seen) >= self.space.size

    def _random_unseen(self) -> dict | None:
        for _ in range(200):
            c = self.space.random(self.rng)
            if _key(c) not in self.seen:
                return c
        rest = [c for c in self.space.points() if _key(c) not in self.seen]
        return rest[int(self.rng.integers(len(rest)))] if rest else None

    def propose(self) -> dict | None:
        if _key(self.default) not in self.seen:
            return dict(self.default)
        return self._random_unseen()


class ModelSearch(RandomSearch):
    def __init__(self, space, default: dict, seed: int = 0):
        super().__init__(space, default, seed)
        self.proposals = 0
        self.hints: list[dict] = []
        self._index = {(k.name, v): i for i, (k, v) in enumerate((k, v) for k in space.knobs for v in k.domain)}

    def hint(self, configs) -> None:
        """Points worth trying here because they were best elsewhere (points of this space only)."""
        names = set(self.space.names)
        self.hints = [dict(c) for c in configs if set(c) == names
                      and all(c[k.name] in k.domain for k in self.space.knobs)]

    def features(self, config: dict) -> np.ndarray:
        one = np.zeros(len(self._index))
        for k in self.space.knobs:
            one[self._index[(k.name, config[k.name])]] = 1.0
        pairs = np.outer(one, one)[np.triu_indices(len(one), 1)]
        return np.concatenate([[1.0], one, pairs])

    def fit(self):
        """Ridge weights on log(count) of the successful measurements, or None when too few."""
        good = [(c, n) for c, n in self.results if n is not None and n > 0]
        if len(good) < MIN_FIT:
            return None
        X = np.stack([self.features(c) for c, _ in good])
        y = np.log(np.array([n for _, n in good], dtype=float))
        mean = y.mean()
        A = X.T @ X + RIDGE * np.eye(X.shape[1])
        return np.linalg.solve(A, X.T @ (y - mean)), mean

    def predict(self, model, config: dict) -> float:
        w, mean = model
        return float(math.exp(self.features(config) @ w + mean))

    def _mutations(self, n: int) -> list[dict]:
        good = sorted(((c, v) for c, v in self.results if v is not None), key=lambda cv: cv[1])[:8]
        out = []
        for _ in range(n):
            if not good:
                break
            c = dict(good[int(self.rng.integers(len(good)))][0])
            for _ in range(1 + int(self.rng.integers(2))):
                k = self.space.knobs[int(self.rng.integers(len(self.space.knobs)))]
                c[k.name] = k.domain[int(self.rng.integers(len(k.domain)))]
            out.append(c)
        return out

    def propose(self) -> dict | None:
        if _key(self.default) not in self.seen:
            return dict(self.default)
        hinted = next((c for c in self.hints if _key(c) not in self.seen), None)
        if hinted is not None:
            return hinted
        self.proposals += 1
        model = self.fit()
        if model is None or self.proposals % EXPLORE == 0:
            return self._random_unseen()
        pool = {_key(c): c for c in self._mutations(POOL) + [self.space.random(self.rng) for _ in range(POOL // 4)]
                if _key(c) not in self.seen}
        if not pool:
            return self._random_unseen()
        return min(pool.values(), key=lambda c: self.predict(model, c))


def make_search(strategy: str, space, default: dict, seed: int = 0):
    assert strategy in STRATEGIES, strategy
    return (ModelSearch if strategy == "model" else RandomSearch)(space, default, seed)
