"""``opsched cost predict`` writes the rows it read back as they were written."""

from __future__ import annotations

import csv
import gzip

from click.testing import CliRunner

from opsched.cli import main

#: A profiler-ops table (the schema of ``hta_ops.csv.gz``): the ``flops`` / ``bytes_min``
#: columns leave a cell blank where no kind is known, the ``top_op`` cell reads ``NA``.
_HEADER = ["gpu", "op", "top_op", "shape", "input_dims", "input_types", "n_kernels",
           "gpu_time_us", "flops", "bytes_min", "kernels", "source"]  # fmt: skip
_ROWS = [
    ["NVIDIA A100-SXM4-80GB", "aten::add_", "NA", "inputs=[[1], [1]]", "[[1], [1], []]",
     '["float", "float", "Scalar"]', "1", "3", "1", "24", "k", "s"],
    ["NVIDIA A100-SXM4-80GB", "aten::zap", "null", "", "[[4]]", '["float"]', "1", "3", "", "",
     "k", "s"],
    ["NVIDIA A100-SXM4-80GB", "aten::mm", "x", "", "[[64, 32], [32, 16]]",
     '["float", "float"]', "1", "4", "65536", "14336", "k", "s"],
]  # fmt: skip


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([_HEADER, *rows])


def test_predict_keeps_every_cell_as_written(tmp_path):
    src = tmp_path / "in.csv"
    _write(src, _ROWS)
    for name in ("out.csv", "out.csv.gz"):
        out = tmp_path / name
        r = CliRunner().invoke(main, ["cost", "predict", "-i", str(src), "-o", str(out)])
        assert r.exit_code == 0, r.output
        opener = gzip.open if name.endswith(".gz") else open
        with opener(out, "rt", newline="", encoding="utf-8") as f:
            got = list(csv.reader(f))
        assert got[0] == [*_HEADER, "predicted_time_us"]
        # the cells as the input wrote them: '1' and '24' (not '1.0', '24.0'), 'NA' and
        # 'null' (not blanks), the blanks blank
        assert [row[:-1] for row in got[1:]] == _ROWS
        prices = [float(row[-1]) for row in got[1:]]
        assert all(p > 0 for p in prices)
