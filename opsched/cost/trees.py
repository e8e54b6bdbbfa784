"""Gradient-boosted regression trees stored as plain arrays and evaluated with numpy.

The cost model's residual correction is trained with scikit-learn's
``HistGradientBoostingRegressor`` (the ``ml`` extra) but shipped as JSON: :func:`from_sklearn`
copies each fitted tree's split feature, threshold, children and leaf values into a
:class:`TreeEnsemble`, whose :meth:`~TreeEnsemble.predict` needs only numpy. No pickle is
written or read, so a profile file cannot run code, and prediction works without scikit-learn.

A sample goes left at a split when ``x[feature] <= threshold`` (NaN follows the split's
``missing_left`` flag), as in scikit-learn; the prediction is ``baseline`` plus the sum of
the leaves reached (learning rate already applied to the leaves).

Examples
--------
>>> import numpy as np
>>> stump = TreeEnsemble(baseline=1.0, feature=np.array([0, 0, 0]),
...                      threshold=np.array([0.5, 0.0, 0.0]), left=np.array([1, 0, 0]),
...                      right=np.array([2, 0, 0]), value=np.array([0.0, -1.0, 2.0]),
...                      leaf=np.array([False, True, True]), missing_left=np.array([True] * 3),
...                      roots=np.array([0]))
>>> stump.predict(np.array([[0.2], [0.9], [np.nan]])).tolist()
[0.0, 3.0, 0.0]
>>> TreeEnsemble.from_dict(stump.to_dict()).predict(np.array([[0.7]])).tolist()
[3.0]
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from opsched._jit import compiled, kernel
from opsched.errors import InputError, OpschedError

__all__ = [
    "NODE_ARRAYS",
    "PREDICT_BLOCK",
    "TREES_FORMAT",
    "TREES_FORMATS",
    "TreeEnsemble",
    "from_sklearn",
    "read_trees",
]

#: The ``format`` field of a trees file (``opsched cost fit`` writes it gzipped). Version 2
#: stores each node array as ``{"dtype": ..., "b64": ...}``, the base64 of its little-endian
#: bytes, which reads about 4x faster than version 1's lists of JSON numbers (0.12 against
#: 0.45 s for the shipped trees, ``benchmarks/bench_cost_predict.py``); both are read, and an
#: array may take either form.
TREES_FORMAT = "opsched-cost-trees/2"

#: Trees file formats :func:`read_trees` reads.
TREES_FORMATS = ("opsched-cost-trees/1", TREES_FORMAT)

#: The binary type each node array is stored as (version 2).
_ARRAY_DTYPES: dict[str, str] = {
    "roots": "<i4", "feature": "<i4", "threshold": "<f8", "left": "<i4", "right": "<i4",
    "value": "<f8", "leaf": "|u1", "missing_left": "|u1",
}  # fmt: skip

#: The node arrays of a :class:`TreeEnsemble`, as a trees file names them.
NODE_ARRAYS = tuple(_ARRAY_DTYPES)


def _pack(values: np.ndarray, dtype: str) -> dict[str, str]:
    raw = np.ascontiguousarray(values, dtype=dtype).tobytes()
    return {"dtype": dtype, "b64": base64.b64encode(raw).decode("ascii")}


def _unpack(stored: Any) -> np.ndarray:
    """A node array from its version-2 form, or from a JSON list (version 1)."""
    if not isinstance(stored, dict):
        return np.asarray(stored)
    dtype = stored.get("dtype")
    if dtype not in _ARRAY_DTYPES.values():
        raise ValueError(f"unknown array dtype {dtype!r}")
    raw = base64.b64decode(stored["b64"], validate=True)
    if len(raw) % np.dtype(dtype).itemsize:
        raise ValueError(f"{len(raw)} bytes are not a whole number of {dtype} items")
    return np.frombuffer(raw, dtype=dtype)


#: Rows :meth:`TreeEnsemble.predict` walks at once.
PREDICT_BLOCK = 512

#: Trees per unit of :func:`opsched._jit.compiled`'s size: a block of rows x trees walks
#: compiled from 100 such units (e.g. 50 rows of a large family's 600 trees), numpy's vector
#: walk below.
COMPILED_WALK_TREES = 300


@dataclass(frozen=True)
class TreeEnsemble:
    """Boosted trees as flat node arrays (all trees concatenated; ``roots`` index the tops).

    Parameters
    ----------
    baseline
        The constant the boosting started from.
    feature, threshold, left, right, value, leaf, missing_left
        Per node: split feature, split threshold, left / right child (global node indices),
        leaf value, whether it is a leaf, where NaN goes.
    roots
        Root node of each tree.
    """

    baseline: float
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    leaf: np.ndarray
    missing_left: np.ndarray
    roots: np.ndarray

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return int(self.roots.size)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Sum of the trees' leaf values plus the baseline, one value per row of ``x``.

        Rows are walked in blocks of :data:`PREDICT_BLOCK`, so the node table of a block
        (rows x trees) stays a few MB however many rows come in.
        """
        x = np.asarray(x, dtype=float)
        n = x.shape[0]
        if self.roots.size == 0 or n == 0:
            return np.full(n, self.baseline)
        if n > PREDICT_BLOCK:
            return np.concatenate([self.predict(x[i : i + PREDICT_BLOCK])
                                   for i in range(0, n, PREDICT_BLOCK)])  # fmt: skip
        n_trees = self.roots.size
        if compiled(n * n_trees // COMPILED_WALK_TREES):
            leaves = np.empty((n, n_trees))
            _walk(self.feature, self.threshold, self.left, self.right, self.value, self.leaf,
                  self.missing_left, self.roots, np.ascontiguousarray(x), leaves)  # fmt: skip
            # the same leaf values summed by the same numpy call as below: equal bit for bit
            return self.baseline + leaves.sum(axis=1)
        # one (row, tree) walker per entry, row-major; only walkers not yet at a leaf move
        node = np.tile(self.roots, n)
        row = np.repeat(np.arange(n), n_trees)
        active = np.nonzero(~self.leaf[node])[0]
        while active.size:
            at = node[active]
            v = x[row[active], self.feature[at]]
            go_left = np.where(np.isnan(v), self.missing_left[at], v <= self.threshold[at])
            at = np.where(go_left, self.left[at], self.right[at])
            node[active] = at
            active = active[~self.leaf[at]]
        return self.baseline + self.value[node].reshape(n, n_trees).sum(axis=1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (:data:`TREES_FORMAT`; leaf values and thresholds kept exact).

        Only what :meth:`predict` reads is kept: a leaf's threshold, feature and children and
        an inner node's value are written as 0 (the file is then about half the size).
        """
        if self.feature.size >= 2**31:  # node indices are stored as 32-bit integers
            raise ValueError(f"too many nodes to store ({self.feature.size:,})")
        inner = ~self.leaf
        arrays = {
            "roots": self.roots,
            "feature": np.where(inner, self.feature, 0),
            "threshold": np.where(inner, self.threshold, 0.0),
            "left": np.where(inner, self.left, 0),
            "right": np.where(inner, self.right, 0),
            "value": np.where(inner, 0.0, self.value),
            "leaf": self.leaf,
            "missing_left": self.missing_left,
        }
        return {"baseline": float(self.baseline)} | {
            k: _pack(a, _ARRAY_DTYPES[k]) for k, a in arrays.items()
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> TreeEnsemble:
        """Inverse of :meth:`to_dict`; checks that the node arrays agree.

        Raises
        ------
        InputError
            Arrays of different lengths or a child index outside the node table.
        """
        kinds = {"<i4": np.int64, "<f8": float, "|u1": bool}  # as each array is used
        try:
            arrays = {k: _unpack(doc[k]).astype(kinds[dt]) for k, dt in _ARRAY_DTYPES.items()}
            ens = cls(baseline=float(doc["baseline"]), **arrays)
        except OpschedError:  # already names the problem (and is a ValueError)
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"malformed tree ensemble ({e})") from None
        n = ens.feature.size
        if any(a.size != n for k, a in arrays.items() if k != "roots"):
            raise InputError("malformed tree ensemble: node arrays differ in length")
        for a in (ens.left, ens.right, ens.roots):
            if a.size and (a.min() < 0 or a.max() >= max(n, 1)):
                raise InputError("malformed tree ensemble: node index out of range")
        return ens


@kernel
def _walk(
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    value: np.ndarray,
    leaf: np.ndarray,
    missing_left: np.ndarray,
    roots: np.ndarray,
    x: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[i, t]``: the value of the leaf row ``i`` of ``x`` reaches in tree ``t``."""
    for t in range(roots.size):  # tree by tree: its nodes stay in cache for every row
        for i in range(x.shape[0]):
            node = roots[t]
            while not leaf[node]:
                v = x[i, feature[node]]
                go_left = missing_left[node] if np.isnan(v) else v <= threshold[node]
                node = left[node] if go_left else right[node]
            out[i, t] = value[node]


def read_trees(raw: bytes, where: str) -> dict[str, TreeEnsemble]:
    """Family -> ensemble from the bytes of a trees file, gzipped or plain JSON.

    Raises
    ------
    InputError
        Not gzip or JSON, or not a :data:`TREES_FORMAT` document (``where`` names the file).

    Examples
    --------
    >>> import gzip, json
    >>> doc = {"format": TREES_FORMAT, "families": {}}
    >>> read_trees(gzip.compress(json.dumps(doc).encode()), "t.json.gz")
    {}
    """
    try:
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, EOFError, ValueError) as e:
        raise InputError(f"unreadable trees file ({e})", where) from None
    if not isinstance(doc, dict) or doc.get("format") not in TREES_FORMATS:
        raise InputError(f"not an {TREES_FORMAT} document", where)
    if not isinstance(doc.get("families"), dict):
        raise InputError("trees file without a 'families' object", where)
    out = {}
    for fam, d in doc["families"].items():
        if not isinstance(d, dict):
            raise InputError(f"families[{fam!r}] must be an object", where)
        try:
            out[fam] = TreeEnsemble.from_dict(d)
        except InputError as e:
            raise e.located(f"{where}: families[{fam!r}]") from None
    return out


def from_sklearn(model: Any) -> TreeEnsemble:
    """Copy a fitted ``HistGradientBoostingRegressor`` (numeric features only).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, (400, 2))
    >>> y = np.sin(6 * x[:, 0]) + x[:, 1]
    >>> m = HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(x, y)
    >>> bool(np.allclose(from_sklearn(m).predict(x), m.predict(x)))
    True
    """
    feats, thr, lefts, rights, vals, leafs, miss, roots = [], [], [], [], [], [], [], []
    offset = 0
    for stage in model._predictors:
        for tree in stage:
            nodes = tree.nodes
            if nodes["is_categorical"].any():
                raise InputError("categorical splits are not supported")
            roots.append(offset)
            feats.append(nodes["feature_idx"].astype(np.int64))
            thr.append(nodes["num_threshold"].astype(float))
            lefts.append(nodes["left"].astype(np.int64) + offset)
            rights.append(nodes["right"].astype(np.int64) + offset)
            vals.append(nodes["value"].astype(float))
            leafs.append(nodes["is_leaf"].astype(bool))
            miss.append(nodes["missing_go_to_left"].astype(bool))
            offset += len(nodes)
    cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
    return TreeEnsemble(
        baseline=float(np.ravel(model._baseline_prediction)[0]),
        feature=cat(feats, np.int64),
        threshold=cat(thr, float),
        left=cat(lefts, np.int64),
        right=cat(rights, np.int64),
        value=cat(vals, float),
        leaf=cat(leafs, bool),
        missing_left=cat(miss, bool),
        roots=np.asarray(roots, dtype=np.int64),
    )
