"""Search strategies over one workload's knob space.

    "random"  uniform over the points not tried yet
    "model"   (default) evolutionary search guided by a cost model fitted on log(count) of the
              measurements so far, and seeded by the best points of the other workloads of
              the same family (`hint`: kws's two identical 3x3 convolutions that differ only
              in their activation find each other's block size at once). Each proposal
              mutates the best points found (one or two knobs changed) plus a few random
              points, and takes the candidate the model predicts fastest; one proposal in
              EXPLORE is random, so the model keeps learning. Until MIN_FIT measurements
              exist it proposes random points.

The cost models (`--cost-model`, COST_MODELS):

    "ridge"   (default, numpy only) a ridge regression on one-hot knob features and their
              pairwise products (the products let a linear model see two knobs interact).
    "xgboost" gradient-boosted trees as AutoTVM fits them (the optional extra
              microcompile[xgboost]): reg:squarederror on log(count), on one-hot knob
              features plus each knob's position in its domain and its value when numeric
              (trees find the interactions themselves) plus the workload's features (log2 of
              its MACs, its kernel count; constant within one workload's search, they let one
              model serve several workloads). One thread and a fixed seed: deterministic.

A search never proposes a point twice (invalid and failed points included) and says when its
space is exhausted (`propose` returns None). The first proposal is the default point.
"""

from __future__ import annotations

import json

import numpy as np

from ..errors import UserError

STRATEGIES = ("model", "random")
COST_MODELS = ("ridge", "xgboost")
XGBOOST_HINT = "pip install 'microcompile[xgboost]' (xgboost is an optional extra), or use --cost-model ridge"
MIN_FIT = 4
EXPLORE = 5           # one proposal in EXPLORE is random
POOL = 64             # candidates scored per proposal
RIDGE = 1e-2
XGB_PARAMS = {"objective": "reg:squarederror", "max_depth": 4, "eta": 0.3, "min_child_weight": 1,
              "subsample": 1.0, "nthread": 1, "tree_method": "exact", "verbosity": 0}
XGB_ROUNDS = 40


def check_cost_model(name: str) -> None:
    """UserError (exit 2) when `name` is not a cost model or its package is not installed."""
    if name not in COST_MODELS:
        raise UserError(f"unknown cost model {name!r}", hint=f"one of {', '.join(COST_MODELS)}")
    if name == "xgboost":
        try:
            import xgboost  # noqa: F401
        except ImportError:
            raise UserError("--cost-model xgboost needs xgboost, which is not installed", hint=XGBOOST_HINT) from None


class RidgeModel:
    """Ridge regression on features with pairwise products (numpy only)."""

    def __init__(self, seed: int = 0):
        self.w = None

    @staticmethod
    def expand(X: np.ndarray) -> np.ndarray:
        iu = np.triu_indices(X.shape[1], 1)
        pairs = (X[:, :, None] * X[:, None, :])[:, iu[0], iu[1]]
        return np.concatenate([np.ones((len(X), 1)), X, pairs], axis=1)

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        F = self.expand(X)
        self.mean = y.mean()
        A = F.T @ F + RIDGE * np.eye(F.shape[1])
        self.w = np.linalg.solve(A, F.T @ (y - self.mean))

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.expand(X) @ self.w + self.mean


class XGBoostModel:
    """Gradient-boosted trees (xgboost) regressing log(count)."""

    def __init__(self, seed: int = 0):
        import xgboost

        self.xgb, self.seed, self.booster = xgboost, seed, None

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        d = self.xgb.DMatrix(X, label=y)
        self.booster = self.xgb.train({**XGB_PARAMS, "seed": self.seed}, d, num_boost_round=XGB_ROUNDS)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.booster.predict(self.xgb.DMatrix(X))


MODELS = {"ridge": RidgeModel, "xgboost": XGBoostModel}


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
    def __init__(self, space, default: dict, seed: int = 0, cost_model: str = "ridge",
                 workload_features: tuple = ()):
        super().__init__(space, default, seed)
        self.proposals = 0
        self.hints: list[dict] = []
        self.cost_model = cost_model
        self.model = MODELS[cost_model](seed)
        self.fitted_on = 0                   # successful measurements the model was fitted on
        self.workload_features = tuple(float(f) for f in workload_features)
        self._index = {(k.name, v): i for i, (k, v) in enumerate((k, v) for k in space.knobs for v in k.domain)}

    def hint(self, configs) -> None:
        """Points worth trying here because they were best elsewhere (points of this space only)."""
        names = set(self.space.names)
        self.hints = [dict(c) for c in configs if set(c) == names
                      and all(c[k.name] in k.domain for k in self.space.knobs)]

    def features(self, config: dict) -> np.ndarray:
        """One-hot per knob value; for the trees also each knob's position in its domain, its
        value when numeric, and the workload's features."""
        one = np.zeros(len(self._index))
        for k in self.space.knobs:
            one[self._index[(k.name, config[k.name])]] = 1.0
        if self.cost_model == "ridge":
            return one
        ordinal = [float(k.domain.index(config[k.name])) for k in self.space.knobs]
        numeric = [float(config[k.name]) if isinstance(config[k.name], (int, float)) else -1.0
                   for k in self.space.knobs]
        return np.concatenate([one, ordinal, numeric, self.workload_features])

    def fit(self) -> bool:
        """Fit the cost model on log(count) of the successful measurements (again only when
        there are new ones); False while there are fewer than MIN_FIT."""
        good = [(c, n) for c, n in self.results if n is not None and n > 0]
        if len(good) < MIN_FIT:
            return False
        if len(good) != self.fitted_on:
            X = np.stack([self.features(c) for c, _ in good])
            self.model.fit(X, np.log(np.array([n for _, n in good], dtype=float)))
            self.fitted_on = len(good)
        return True

    def predict(self, configs: list[dict]) -> np.ndarray:
        """Predicted counts of `configs` (after fit)."""
        return np.exp(self.model.predict(np.stack([self.features(c) for c in configs])))

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
        if not self.fit() or self.proposals % EXPLORE == 0:
            return self._random_unseen()
        pool = list({_key(c): c for c in self._mutations(POOL) + [self.space.random(self.rng) for _ in range(POOL // 4)]
                     if _key(c) not in self.seen}.values())
        if not pool:
            return self._random_unseen()
        return pool[int(np.argmin(self.predict(pool)))]


def make_search(strategy: str, space, default: dict, seed: int = 0, cost_model: str = "ridge",
                workload_features: tuple = ()):
    """A search of `strategy` (STRATEGIES) over `space`; the model search fits `cost_model`
    (COST_MODELS; check_cost_model first for a user's choice)."""
    assert strategy in STRATEGIES, strategy
    if strategy == "model":
        return ModelSearch(space, default, seed, cost_model, workload_features)
    return RandomSearch(space, default, seed)
