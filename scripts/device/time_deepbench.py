"""Time DeepBench's training shapes (convolutions in three directions, GEMMs) and an aligned
half-precision GEMM sweep on this machine's GPU, within a hard time budget.

Made ``datasets/kernel-timings/opsched_h200_deepbench_{conv,gemm,gemm_half}.csv.gz`` and
``opsched_h200_aligned_half.csv.gz`` (GEMM rows split by precision afterwards; see PROVENANCE.md
there). Each stage has its own
budget and appends its rows to the output folder chunk by chunk, so a run stopped early keeps
what it measured; shapes are timed in a fixed random order, so a stage cut short still spreads
over the sizes.

Run: ``python scripts/device/time_deepbench.py OUT_DIR [TOTAL_BUDGET_S]``; with
``PREV_DIR=DIR`` (the OUT_DIR of an earlier run) only the DeepBench shapes that run did not
reach are timed, the stage shares then spread over the stages left. ``OPSCHED_DEVICE=cpu``
is a dry run of the script on the CPU (float32 only).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

STAGES = (  # (schema, dtype, share of the budget)
    ("deepbench_conv", "tf32", 0.20),
    ("deepbench_conv", "float16", 0.17),
    ("deepbench_gemm", "float16", 0.07),
    ("deepbench_gemm", "bfloat16", 0.06),
    ("deepbench_gemm", "tf32", 0.06),
    ("deepbench_gemm", "float32", 0.06),
    ("deepbench_conv", "float32", 0.16),
    ("aligned", "bfloat16", 0.08),
    ("aligned", "float16", 0.07),
    ("deepbench_conv", "bfloat16", 0.07),
)
TABLES = {
    "deepbench_conv": "datasets/kernel-timings/deepbench_conv.csv",
    "deepbench_gemm": "datasets/kernel-timings/deepbench_gemm.csv",
}
CHUNK = 10


def _import_opsched_without_extras() -> None:
    """The GPU machine has torch and pandas but not the solver's packages (OR-Tools...):
    register the package without running its ``__init__`` so the cost modules import alone."""
    try:
        import opsched  # noqa: F401
    except ImportError:
        import types

        pkg = types.ModuleType("opsched")
        pkg.__path__ = [os.path.join(os.path.dirname(__file__), "..", "..", "opsched")]
        sys.modules["opsched"] = pkg


def aligned_specs() -> list[dict[str, int | str]]:
    """GEMMs with every dimension a multiple of 64: the shapes cuBLAS's fastest half-precision
    kernels need, which NeuSight's random sizes almost never have."""
    sizes, wide = (64, 256, 1024), (256, 1024, 4096)
    lin = [{"op": "linear", "B": 1, "M": m, "N": n, "K": k}
           for m in (128, 512, 2048, 8192) for n in wide for k in wide]  # fmt: skip
    bmm = [{"op": "bmm", "B": b, "M": m, "N": n, "K": k}
           for b in (8, 64) for m in sizes for n in sizes for k in sizes]  # fmt: skip
    return lin + bmm  # type: ignore[return-value]


KEYS = {
    "deepbench_conv": ["N", "C", "H", "W", "K", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w"],
    "deepbench_gemm": ["M", "N", "K", "transA", "transB"],
}
SPELLED = {"float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16"}


def _todo(schema: str, dtype: str, table: Any, prev: str | None) -> Any:
    """The shapes of ``table`` an earlier run (its OUT_DIR ``prev``) did not time."""
    path = os.path.join(prev, f"{schema}.csv") if prev else ""
    if not path or not os.path.exists(path):
        return table
    import pandas as pd

    p = pd.read_csv(path)
    keys = KEYS[schema]
    done = {tuple(r) for r in p[p["dtype"] == SPELLED[dtype]][keys].itertuples(index=False)}
    return table[[tuple(r) not in done for r in table[keys].itertuples(index=False)]]


def main(out_dir: str, total: float) -> None:
    import torch

    dev = os.environ.get("OPSCHED_DEVICE", "cuda")  # "cpu": a dry run of the script, float32
    _import_opsched_without_extras()

    from opsched.cost.collect import collect
    from opsched.cost.collect_deepbench import collect_deepbench
    from opsched.cost.data import read_table

    print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
          torch.cuda.get_device_name() if dev == "cuda" else "cpu", flush=True)  # fmt: skip
    tables = {}
    for schema, path in TABLES.items():
        t = read_table(path)
        t = t[t["suite"] == "train"].drop_duplicates(KEYS[schema])
        tables[schema] = t.sample(frac=1.0, random_state=0)  # a fixed random order
    prev = os.environ.get("PREV_DIR")
    stages = [(schema, dtype if dev == "cuda" else "float32", share)
              for schema, dtype, share in STAGES]  # fmt: skip
    if prev:  # finish the DeepBench stages of an earlier run, the budget split evenly
        stages = [(sc, dt, 0.0) for sc, dt, _ in stages
                  if sc != "aligned" and len(_todo(sc, dt, tables[sc], prev))]  # fmt: skip
        stages = [(sc, dt, 1 / len(stages)) for sc, dt, _ in stages]
    t_all = time.time()
    for schema, dtype, share in stages:
        budget, t0, n = share * total, time.time(), 0
        out = os.path.join(out_dir, f"{schema}.csv" if schema != "aligned" else "aligned_half.csv")
        if schema == "aligned":
            specs = aligned_specs()
            chunks = [specs[i : i + CHUNK] for i in range(0, len(specs), CHUNK)]
        else:
            t = _todo(schema, dtype, tables[schema], prev)
            chunks = [t.iloc[i : i + CHUNK] for i in range(0, len(t), CHUNK)]
        for chunk in chunks:
            left = budget - (time.time() - t0)
            if left <= 0:
                break
            try:  # one failing chunk (a shape the library refuses) keeps the others
                if schema == "aligned":
                    df = collect(dev, specs=chunk, dtype=dtype, repeats=15, seconds_per_shape=0.3)
                else:
                    df = collect_deepbench(chunk, schema, dev, dtype, budget_s=left)
            except Exception as e:
                print(f"{schema} {dtype}: {type(e).__name__}: {e}", flush=True)
                continue
            df.to_csv(out, mode="a", header=not os.path.exists(out), index=False)
            n += len(df)
        print(f"{schema:15s} {dtype:9s} {n:4d} rows {time.time() - t0:6.1f} s"
              f" (budget {budget:.0f}; total {time.time() - t_all:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 420.0)
