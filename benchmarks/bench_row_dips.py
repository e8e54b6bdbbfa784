"""Where a row-wise op is priced above a larger one of the same width (docs/cost-model.md,
twenty-fifth round).

More rows of the same width do more work, so a softmax, layernorm or rmsnorm kernel should
never be priced far above the same op over more rows. For every GPU of the specs, float32 and
float16, forward and backward, widths 32 / 64 / 256 / 1,000 / 4,096 / 32,768 and rows 1 to
4,096, the script takes each price's ratio to the least price of the same op over more rows,
and prints per family the worst ratio and where it is, then the two cases the round names
(one 4,096-wide float16 softmax row against 256 on the A100-SXM4-80GB; an L4 layernorm
backward over 32 and 64 rows of 32,768).

Reproduce (2 cores, about 20 s): ``python benchmarks/bench_row_dips.py``. The numbers
before the twenty-fifth round: the same script run against commit b5d3c97 (a worktree and
``PYTHONPATH``, as ``bench_half_before_volta.py`` describes).
"""

from __future__ import annotations

import warnings

from opsched.cost import known_gpus, load_profile

ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
COLS = (32, 64, 256, 1000, 4096, 32768)


def main() -> None:
    warnings.simplefilter("ignore")  # GPUs priced by transfer say so once each
    worst: dict[str, tuple[float, str]] = {}
    for gpu in known_gpus():
        p = load_profile(gpu)
        for kind in ("softmax", "layernorm", "rmsnorm"):
            for dtype in ("float32", "float16"):
                for fn in ("", "backward"):
                    for cols in COLS:
                        prices = []
                        for rows in ROWS:
                            a = {"rows": rows, "cols": cols, "dtype": dtype}
                            prices.append(p.predict(kind, a | ({"fn": fn} if fn else {})))
                        ratio = max(t / min(prices[i:]) for i, t in enumerate(prices))
                        if ratio > worst.get(kind, (0.0, ""))[0]:
                            where = f"{gpu} {dtype} {fn or 'forward'} {cols} columns"
                            worst[kind] = (ratio, where)
    print("| family | worst price / least price of more rows | where |")
    print("|---|---|---|")
    for kind, (ratio, where) in worst.items():
        print(f"| {kind} | {ratio:.2f} | {where} |")
    a100 = load_profile("A100-SXM4-80GB")
    one, many = (a100.predict("softmax", {"rows": r, "cols": 4096, "dtype": "float16"})
                 for r in (1, 256))  # fmt: skip
    print(
        f"\nA100-SXM4-80GB float16 softmax, 4,096 columns: 1 row {one:.1f} us, "
        f"256 rows {many:.1f} us"
    )
    l4 = load_profile("L4")
    ln = [l4.predict("layernorm", {"rows": r, "cols": 32768, "dtype": "float16",
                                   "fn": "backward"}) for r in (32, 64)]  # fmt: skip
    print(f"L4 float16 layernorm backward, 32,768 columns: 32 rows {ln[0]:.1f} us, "
          f"64 rows {ln[1]:.1f} us (the streaming cap)")  # fmt: skip


if __name__ == "__main__":
    main()
