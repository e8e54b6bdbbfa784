"""RandWire (Xie, Kirillov, Girshick and He, 2019), the small regime, with WS(4, 0.75) graphs.

Stem (Table 1, small regime): a 3x3/2 convolution to ``C/2`` channels + BN + ReLU and a
3x3/2 convolution to ``C`` + BN. Then three randomly wired stages at 28, 14 and 7 pixels, each
of ``N`` nodes, with ``C``, ``2C`` and ``4C`` channels (``N = 32``, ``C = 78``).
Each stage's graph is a Watts-Strogatz graph (ring lattice of ``k = 4`` neighbours, each edge
rewired with probability ``p = 0.75``) turned into a DAG by pointing every edge from the lower
to the higher node index. A node aggregates its inputs by a weighted sum (one learnt weight
per edge; no op for a single input), then applies ReLU, a 3x3 separable convolution
(depthwise + pointwise) and BN. Nodes without a predecessor read the stage input with stride
2; the stage output is the average of the nodes without a successor. Classifier: ReLU, 1x1
convolution to 1280 channels + BN + ReLU, global average pool, 1000-way fully connected layer.
The paper reports 583M multiply-adds and 5.6M parameters on average over its random graphs;
one seeded draw lands within a few per cent of both.

The random graphs depend only on ``seed`` (Python's ``random.Random``); they are stored in the
graph's ``attrs["stages"]`` as edge lists.

References
----------
S. Xie, A. Kirillov, R. Girshick, K. He. Exploring Randomly Wired Neural Networks for Image
Recognition. ICCV 2019, arXiv:1904.01569 (Table 1 and Table 2).

Examples
--------
>>> ws_dag(8, 4, 0.0, random.Random(0))[:5]  # p = 0: the ring lattice itself
[(0, 1), (0, 2), (0, 6), (0, 7), (1, 2)]
>>> g = randwire(seed=3)
>>> g.to_dict() == randwire(seed=3).to_dict(), g["stage5.output"].attrs["out_shape"]
(True, [1, 312, 7, 7])
"""

from __future__ import annotations

import numbers
import random

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.zoo.models.builder import NetBuilder, Tensor

__all__ = ["randwire", "ws_dag"]


def ws_dag(n: int, k: int, p: float, rng: random.Random) -> list[tuple[int, int]]:
    """Edges ``(u, v)``, ``u < v``, of a Watts-Strogatz graph oriented from low to high index.

    Start from the ring lattice where node ``i`` is joined to its ``k/2`` nearest neighbours
    on each side. Then, for ``j = 1 .. k/2`` and each node ``i`` in turn, the edge from ``i``
    to ``i + j`` (mod ``n``), if still there, is replaced with probability ``p`` by an edge
    from ``i`` to a uniformly drawn node that is neither ``i`` nor already joined to it.
    Every node keeps at least ``k/2`` edges, so none is isolated.

    Parameters
    ----------
    n, k, p
        Nodes, lattice degree (even, ``< n``) and rewiring probability.
    rng
        The random source (the result depends only on its state).

    Returns
    -------
    list of (int, int)
        Sorted edges.

    Examples
    --------
    >>> len(ws_dag(32, 4, 0.75, random.Random(1)))  # rewiring keeps n * k / 2 edges
    64
    """
    if k % 2 or not 0 < k < n:
        raise ProblemError(f"Watts-Strogatz needs an even k with 0 < k < n, got k={k}, n={n}")
    if not 0.0 <= p <= 1.0:
        raise ProblemError(f"rewiring probability must be in [0, 1], got {p}")
    adj: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for j in range(1, k // 2 + 1):
            adj[i].add((i + j) % n)
            adj[(i + j) % n].add(i)
    for j in range(1, k // 2 + 1):
        for i in range(n):
            v = (i + j) % n
            if v not in adj[i] or rng.random() >= p:
                continue
            free = [w for w in range(n) if w != i and w not in adj[i]]
            if not free:
                continue
            w = rng.choice(free)
            adj[i].discard(v)
            adj[v].discard(i)
            adj[i].add(w)
            adj[w].add(i)
    return sorted((a, b) for a in range(n) for b in adj[a] if a < b)


def _sep_node(nb: NetBuilder, x: Tensor, ch: int, stride: int) -> Tensor:
    c = x.shape[1]
    y = nb.act(x, name="relu")
    y = nb.conv(y, c, 3, stride=stride, pad=1, groups=c, name="depthwise")
    return nb.bn(nb.conv(y, ch, 1, name="pointwise"), name="bn")


def _stage(nb: NetBuilder, x: Tensor, ch: int, edges: list[tuple[int, int]], n: int) -> Tensor:
    preds: list[list[int]] = [[] for _ in range(n)]
    has_succ = [False] * n
    for u, v in edges:
        preds[v].append(u)
        has_succ[u] = True
    out: list[Tensor] = []
    for v in range(n):  # edges go from low to high index: this is a topological order
        with nb.scope(f"node{v}"):
            if not preds[v]:
                out.append(_sep_node(nb, x, ch, 2))
                continue
            ins = [out[u] for u in preds[v]]
            agg = (
                ins[0]
                if len(ins) == 1
                else nb.add(ins, "weighted_sum", params=len(ins), name="aggregate")
            )
            out.append(_sep_node(nb, agg, ch, 1))
    sinks = [out[v] for v in range(n) if not has_succ[v]]
    return sinks[0] if len(sinks) == 1 else nb.add(sinks, "mean", name="output")


def randwire(
    batch: int = 1,
    dtype: str = "float32",
    seed: int = 0,
    *,
    nodes: int = 32,
    channels: int = 78,
    k: int = 4,
    p: float = 0.75,
    image: int = 224,
    classes: int = 1000,
) -> OpGraph:
    """A RandWire network of the small regime, its three stage graphs drawn from ``seed``.

    Parameters
    ----------
    batch
        Images per batch.
    dtype
        Element type of every tensor.
    seed
        Seed of the random graphs, >= 0 (the same seed gives the same network).
    nodes, channels
        ``N`` and ``C`` of the paper (32 and 78 in the small regime).
    k, p
        Watts-Strogatz lattice degree and rewiring probability.
    image, classes
        Input height and width; outputs of the classifier.

    Returns
    -------
    OpGraph
        The network; ``attrs["stages"]`` holds the three stage graphs' edges.

    Examples
    --------
    >>> g = randwire(seed=0)
    >>> g.attrs["stages"]["stage3"]["nodes"], len(g.attrs["stages"]["stage4"]["edges"])
    (32, 64)
    """
    # random.Random seeds from abs(seed), so -3 would draw seed 3's graphs while the graph
    # records -3: a sweep over signed seeds would hold the same network twice under two names
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ProblemError(f"randwire: seed must be an integer >= 0, got {seed!r}")
    seed = int(seed)
    if nodes < 2 * (k + 1):
        raise ProblemError(f"randwire: nodes must be >= {2 * (k + 1)} for k={k}, got {nodes}")
    rng = random.Random(seed)
    nb = NetBuilder("randwire", dtype=dtype)
    x = nb.input("input", (batch, 3, image, image))
    x = nb.conv_bn(x, channels // 2, 3, "conv1", stride=2, pad=1)
    x = nb.conv_bn(x, channels, 3, "conv2", stride=2, pad=1, act=None)
    stages: dict[str, dict[str, object]] = {}
    for name, n, ch in (
        ("stage3", nodes, channels),
        ("stage4", nodes, 2 * channels),
        ("stage5", nodes, 4 * channels),
    ):
        edges = ws_dag(n, k, p, rng)
        stages[name] = {"nodes": n, "edges": [list(e) for e in edges]}
        with nb.scope(name):
            x = _stage(nb, x, ch, edges, n)
    x = nb.act(x, name="classifier.relu")
    x = nb.conv_bn(x, 1280, 1, "classifier.conv")
    x = nb.global_pool(x, name="avgpool")
    x = nb.view(x, (batch, 1280), name="flatten")
    nb.linear(x, classes, name="fc")
    return nb.build(
        {
            "model": "randwire",
            "batch": batch,
            "seed": seed,
            "ws": {"k": k, "p": p},
            "input_shape": [batch, 3, image, image],
            "stages": stages,
        }
    )
