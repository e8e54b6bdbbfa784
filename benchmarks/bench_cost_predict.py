"""How fast the cost model prices ops, and what each fast path of pricing buys.

Prices the same ops with one GPU's shipped profile several ways, side by side in one run:

- ``both fast paths``: as shipped;
- ``vector tree walk``: the residual trees walked with numpy instead of the compiled walker
  (``OPSCHED_JIT=0``);
- ``every op priced``: no deduplication of repeated ops (:mod:`opsched.cost.batch`);
- ``neither``: both off;
- ``curves alone``: both fast paths, no residual trees (what the trees cost).

Workloads: 20,000 random GEMMs (16-8191 per dimension), small GEMMs (1-199, also priced by
their paddings), 3x3 convolutions, elementwise ops, and a batch of every zoo network 20
times over in float16 (repeated shapes, stated FLOP and byte counts, as ``apply`` sees a
large graph); then ``apply`` on that batch as one graph, and reading the trees file (as
shipped, and the same trees in the older list format). Each cell is the best of three
runs; the ratio to ``neither`` is what carries over between machines. All ways give
the same prices (``tests/cost/test_batch.py``).

Reproduce (2 cores, about 2 min):
    OMP_NUM_THREADS=1 python benchmarks/bench_cost_predict.py
    OMP_NUM_THREADS=1 python benchmarks/bench_cost_predict.py --gpu T4 --old-trees OLD.json.gz
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from opsched.cost import apply, load_profile
from opsched.cost.profile import TREES_FILE, Profile
from opsched.cost.specs import profiles_dir
from opsched.cost.trees import NODE_ARRAYS, read_trees
from opsched.ir import OpGraph
from opsched.zoo.models import MODELS, build


def _ops(kind: str, n: int, rng: np.random.Generator, dtype: str) -> list[dict]:
    if kind == "matmul":
        return [{"M": int(m), "N": int(k), "K": int(kk), "dtype": dtype}
                for m, k, kk in rng.integers(16, 8192, (n, 3))]  # fmt: skip
    if kind == "small matmul":
        return [{"M": int(m), "N": int(k), "K": int(kk), "dtype": dtype}
                for m, k, kk in rng.integers(1, 200, (n, 3))]  # fmt: skip
    if kind == "conv2d":
        return [{"N": int(b), "C": int(c), "H": int(h), "W": int(h), "K": int(k), "R": 3,
                 "S": 3, "pad_h": 1, "pad_w": 1, "dtype": dtype}
                for b, c, h, k in zip(rng.integers(1, 64, n), rng.integers(3, 512, n),
                                      rng.integers(7, 224, n), rng.integers(16, 512, n),
                                      strict=True)]  # fmt: skip
    return [{"numel": int(v), "fn": "relu", "dtype": dtype}
            for v in rng.integers(1_000, 50_000_000, n)]  # fmt: skip


def _zoo_graph(times: int) -> OpGraph:
    """Every zoo network ``times`` times over, as one graph (ops renamed per copy)."""
    ops = []
    for t in range(times):
        for name in MODELS:
            for op in build(name).ops:
                ops.append(replace(op, name=f"{t}/{name}/{op.name}",
                                   deps=tuple(f"{t}/{name}/{d}" for d in op.deps)))  # fmt: skip
    return OpGraph(ops, name=f"zoo-x{times}")


@contextlib.contextmanager
def _vector_walk(on: bool) -> Iterator[None]:
    saved = os.environ.get("OPSCHED_JIT")
    if on:
        os.environ["OPSCHED_JIT"] = "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("OPSCHED_JIT", None)
        else:
            os.environ["OPSCHED_JIT"] = saved


def _price(prof: Profile, dedup: bool) -> Callable[[list[str], list[dict]], np.ndarray]:
    if dedup:
        return lambda k, a: prof.predict_many(k, a, "kernel")
    return lambda k, a: prof._predict(k, a, "kernel", None, pad=True)


def _best(fn: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="T4", help="a GPU with timings (others get no trees)")
    ap.add_argument("--ops", type=int, default=20_000, help="ops per random workload")
    ap.add_argument("--dtype", default="float32", help="the random workloads' precision")
    ap.add_argument("--zoo-times", type=int, default=20, help="copies of the zoo batch")
    ap.add_argument("--old-trees", help="another trees JSON (plain or .gz) to compare")
    a = ap.parse_args()
    prof = load_profile(a.gpu)
    shipped = prof.trees
    rng = np.random.default_rng(0)
    loads: dict[str, tuple[list[str], list[dict]]] = {}
    for kind in ("matmul", "small matmul", "conv2d", "elementwise"):
        attrs = _ops(kind, a.ops, rng, a.dtype)
        loads[kind] = (["matmul" if "matmul" in kind else kind] * len(attrs), attrs)
    graph = _zoo_graph(a.zoo_times)
    loads[f"zoo x{a.zoo_times} (float16)"] = (
        [op.kind or "" for op in graph.ops],
        [dict(op.attrs) | {"dtype": "float16"} for op in graph.ops],
    )
    # name -> (vector walk, dedup, trees)
    ways = {
        "both fast paths": (False, True, shipped),
        "vector tree walk": (True, True, shipped),
        "every op priced": (False, False, shipped),
        "neither": (True, False, shipped),
        "curves alone": (False, True, {}),
    }
    if a.old_trees:
        ways["--old-trees"] = (False, True, read_trees(Path(a.old_trees).read_bytes(), a.old_trees))
    print(f"\npricing on {a.gpu} (method kernel), us per op, best of 3; "
          "in brackets: x the time of 'neither'\n")  # fmt: skip
    print("| workload | ops | " + " | ".join(ways) + " |")
    print("|---|---|" + "---|" * len(ways))
    for label, (kl, al) in loads.items():
        cells, base = {}, 0.0
        for name, (vector, dedup, trees) in ways.items():
            prof.trees = trees
            with _vector_walk(vector):
                price = _price(prof, dedup)
                price(kl[:300], al[:300])  # warm: the compiled walker's first load
                cells[name] = _best(lambda p=price, k=kl, x=al: p(k, x)) / len(kl) * 1e6
        base = cells["neither"]
        row = " | ".join(f"{us:.1f} ({us / base:.2f})" for us in cells.values())
        print(f"| {label} | {len(kl):,} | {row} |")
    prof.trees = shipped
    apply(graph, a.gpu, "float16")  # warm
    took = _best(lambda: apply(graph, a.gpu, "float16"))
    print(f"\napply() on one graph of every zoo network {a.zoo_times} times over "
          f"({graph.num_ops:,} ops, float16, {a.gpu}): {took:.2f} s, "
          f"{took / graph.num_ops * 1e6:.1f} us per op")  # fmt: skip
    _trees_read()
    print("\nreproduce: OMP_NUM_THREADS=1 python benchmarks/bench_cost_predict.py "
          f"--gpu {a.gpu} --ops {a.ops} --dtype {a.dtype} --zoo-times {a.zoo_times}")  # fmt: skip


def _trees_read() -> None:
    """Time reading the shipped trees file, and the same trees with their node arrays as
    JSON lists (the trees file format 1)."""
    raw = (Path(profiles_dir()) / TREES_FILE).read_bytes()
    doc = json.loads(gzip.decompress(raw))
    trees = read_trees(raw, TREES_FILE)
    lists = {f: {"baseline": e.baseline} | {k: getattr(e, k).tolist() for k in NODE_ARRAYS}
             for f, e in trees.items()}  # fmt: skip
    old = {"format": "opsched-cost-trees/1", "families": lists}
    raw1 = gzip.compress(json.dumps(old, separators=(",", ":")).encode(), mtime=0)
    t2, t1 = _best(lambda: read_trees(raw, "")), _best(lambda: read_trees(raw1, ""))
    print(f"\nreading the shipped trees ({doc['format']}, {len(raw) / 1e6:.1f} MB): "
          f"{t2:.2f} s; the same trees as JSON lists (format 1, {len(raw1) / 1e6:.1f} MB): "
          f"{t1:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
