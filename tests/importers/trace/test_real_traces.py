"""The importer on the three shipped traces.

Expected numbers were checked independently against the shared kernel tables built from the
same traces (``kineto_resnet50_v100_*.csv.gz``, ``hta_*.csv.gz``, rows of these sources):
kernel counts, kernel-time sums and the op-instance row counts; per-step numbers by the ops'
start times in each ``ProfilerStep`` window.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from opsched.cost.evaluate import predict_table
from opsched.datasets import dataset_path
from opsched.errors import InputError
from opsched.importers.trace import ImportedTrace, build_step, import_trace
from opsched.importers.trace.rows import ROW_COLUMNS
from opsched.validate import validate

RESNET = "resnet50_v100_step.pt.trace.json.gz"
HTA = "hta_a100_control.pt.trace.json.gz"
H200 = "h200_torch211_step.pt.trace.json.gz"  # recorded by us: PyTorch 2.11, Triton, 2 streams


@pytest.fixture(scope="module")
def resnet() -> ImportedTrace:
    return import_trace(dataset_path("traces") / RESNET)


@pytest.fixture(scope="module")
def hta() -> ImportedTrace:
    return import_trace(dataset_path("traces") / HTA)


def _raw_step_busy(name: str, step: int) -> tuple[int, float]:
    """Kernel count and GPU time (kernels, memcpys, memsets) launched in a step, by hand."""
    doc = json.loads(gzip.decompress((dataset_path("traces") / name).read_bytes()))
    ev = doc["traceEvents"]
    st = next(e for e in ev if e.get("name") == f"ProfilerStep#{step}" and e.get("ph") == "X")
    lo, hi = st["ts"], st["ts"] + st["dur"]
    calls = {
        e["args"]["correlation"]: e["ts"]
        for e in ev
        # Triton kernels are launched through the driver API (cuLaunchKernel)
        if e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver") and "correlation" in e["args"]
    }
    gpu = [
        e
        for e in ev
        if e.get("cat") in ("Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset")
        and lo <= calls.get(e["args"]["correlation"], -1) < hi
    ]
    return sum(e["cat"] in ("Kernel", "kernel") for e in gpu), sum(e["dur"] for e in gpu)


def test_resnet_rows_match_the_shared_table(resnet: ImportedTrace) -> None:
    r = resnet.rows
    assert list(r.columns) == list(ROW_COLUMNS)
    assert (len(r), r["n_kernels"].sum(), r["gpu_time_us"].sum()) == (7596, 8772, 591532)
    assert set(r["gpu"]) == {"Tesla V100-DGXS-32GB"}
    conv1 = r[r["op"] == "aten::cudnn_convolution"].iloc[0]
    assert conv1["flops"] == 2 * 32 * 64 * 3 * 7 * 7 * 112 * 112  # 7.55 GFLOP, as in the table
    assert conv1["top_op"] == "ProfilerStep#5" and conv1["n_kernels"] == 2
    wgrad = r[r["op"] == "aten::cudnn_convolution_backward_weight"].iloc[0]
    assert "conv2d_bwd_filter" in wgrad["shape"] and wgrad["flops"] > 0


def test_resnet_step_graph(resnet: ImportedTrace) -> None:
    tl = resnet.timeline
    g, s = tl.graph, tl.schedule
    assert tl.step == 5 and g.attrs["streams"] == [7]
    assert (g.attrs["kernels"], g.attrs["kernel_time_us"]) == (1462, 98598)
    kernels, busy = _raw_step_busy(RESNET, 5)
    assert kernels == 1462 and sum(op.duration for op in g.ops) == busy
    # one stream: a chain, every edge a stream edge
    assert g.num_edges == g.num_ops - 1
    assert {k for op in g.ops for k in op.attrs["dep_kinds"].values()} == {"stream"}
    conv1 = next(op for op in g.ops if op.kind == "conv2d")
    assert conv1.name == "aten::conv2d#1"
    assert {
        k: conv1.attrs[k] for k in ("N", "C", "H", "W", "K", "R", "S", "stride_h", "pad_h")
    } == {"N": 32, "C": 3, "H": 224, "W": 224, "K": 64, "R": 7, "S": 7, "stride_h": 2, "pad_h": 3}
    assert conv1.output_bytes == 32 * 64 * 112 * 112 * 4
    kinds = Counter(op.kind for op in g.ops)
    assert kinds["conv2d"] == 53 and kinds["fused"] == 53  # 53 convolutions, 53 backward
    assert kinds["batchnorm"] == 106 and kinds["matmul"] == 3  # fc: addmm, 2 mm in backward
    rep = validate(tl.problem, s)
    assert rep.valid and s.makespan == max(o.end for o in s.ops) == 118872
    assert {o.unit for o in s.ops} == {0}


def test_hta_rows_and_streams(hta: ImportedTrace) -> None:
    r = hta.rows
    assert (len(r), r["n_kernels"].sum(), r["gpu_time_us"].sum()) == (7452, 8520, 439171)
    assert set(r["gpu"]) == {"NVIDIA A100-PG509-200"}
    tl = hta.timeline
    g = tl.graph
    assert tl.step == 1009 and g.attrs["streams"] == [7, 20, 21, 22]
    assert g.attrs["kernels"] == 1428  # 1420 under a CPU op + 8 from FusedAdam's annotation
    under_op = [
        op
        for op in g.ops
        if "aten_op" in op.attrs and op.attrs["aten_op"] != "Optimizer.step#FusedAdam.step"
    ]
    assert sum(op.attrs["n_kernels"] for op in under_op) == 1420
    nccl = [op for op in g.ops if op.attrs["stream"] == 21]
    assert nccl and all("nccl" in k for op in nccl for k in op.attrs["kernels"])
    deps = Counter(k for op in g.ops for k in op.attrs["dep_kinds"].values())
    assert deps["event"] > 0 and deps["host"] > 0
    units = {o.name: o.unit for o in tl.schedule.ops}
    cross = [
        (p, op.name) for op in g.ops for p, k in op.attrs["dep_kinds"].items() if k != "stream"
    ]
    assert cross and all(units[p] != units[q] for p, q in cross)
    assert validate(tl.problem, tl.schedule).valid


def test_other_step_and_missing_step(hta: ImportedTrace) -> None:
    tl = build_step(hta.trace, hta.launches, 1012)
    assert tl.step == 1012 and validate(tl.problem, tl.schedule).valid
    assert tl.graph.attrs["kernels"] == _raw_step_busy(HTA, 1012)[0]
    with pytest.raises(InputError, match="steps: 1009, 1010, 1011, 1012, 1013, 1014"):
        build_step(hta.trace, hta.launches, 7)


def test_h200_trace_torch211_triton_and_a_side_stream() -> None:
    imp = import_trace(dataset_path("traces") / H200)
    assert (len(imp.rows), imp.rows["n_kernels"].sum()) == (210, 256)  # two active steps
    assert set(imp.rows["gpu"]) == {"NVIDIA H200"}
    tl = imp.timeline
    g = tl.graph
    assert tl.step == 2 and g.attrs["streams"] == [7, 46]
    kernels, busy = _raw_step_busy(H200, 2)  # counts driver-API (Triton) launches too
    assert g.attrs["kernels"] == kernels == 128
    assert sum(op.duration for op in g.ops) == pytest.approx(busy, abs=0.01)
    triton = [op for op in g.ops if op.attrs.get("triton")]
    assert len(triton) == 6 and all(
        any(k.startswith("triton_") for k in op.attrs["kernels"]) for op in triton
    )
    # the 2048^3 float32 matmul launched on the side stream, alone on its stream
    (side,) = [op for op in g.ops if op.attrs["stream"] == 46]
    assert side.kind == "matmul" and (side.attrs["M"], side.attrs["N"], side.attrs["K"]) == (
        2048,
        2048,
        2048,
    )
    assert "sgemm" in side.attrs["kernels"][0] and side.output_bytes == 2048 * 2048 * 4
    units = {o.name: o.unit for o in tl.schedule.ops}
    assert units[side.name] != units[triton[0].name]
    assert validate(tl.problem, tl.schedule).valid
    assert build_step(imp.trace, imp.launches, 3).graph.attrs["kernels"] == 128


def test_h200_resnet_convolution_backward_argument_order() -> None:
    """PyTorch 2's ``aten::convolution_backward`` takes (grad_output, input, weight): read as
    (input, grad_output, weight), 39 of ResNet-50's 53 got no kind (the rest only because
    their input and output channels agree)."""
    g = import_trace(dataset_path("traces") / "resnet50_h200_torch2110_step.pt.trace.json.gz")
    bwd = [op for op in g.timeline.graph.ops if op.attrs["aten_op"] == "aten::convolution_backward"]
    assert len(bwd) == 53 and {op.kind for op in bwd} == {"fused"}
    first = bwd[0]  # the last bottleneck's 1x1 expansion: dy 2048 channels, x 512
    assert first.attrs["input_dims"][:3] == [[32, 2048, 7, 7], [32, 512, 7, 7], [2048, 512, 1, 1]]
    data, filt = first.attrs["parts"]
    assert (data["kind"], filt["kind"]) == ("conv2d_bwd_data", "conv2d_bwd_filter")
    assert (data["C"], data["K"], data["H"], data.get("groups", 1)) == (512, 2048, 7, 1)
    # the stem convolution computes no input gradient: only its filter half ran
    assert [len(op.attrs["parts"]) for op in bwd].count(1) == 1
    assert bwd[-1].attrs["parts"][0]["kind"] == "conv2d_bwd_filter"
    assert (bwd[-1].attrs["parts"][0]["C"], bwd[-1].attrs["parts"][0]["stride_h"]) == (3, 2)


def test_cost_apply_prices_every_traced_op(hta: ImportedTrace) -> None:
    # ops the importer leaves without a kind are priced as the timing rows of the fit are
    # (a shape rule where one applies, else opaque from their inputs), NCCL ops keep their
    # traced time; nothing is priced at zero and the result schedules and validates
    from opsched.cost import apply
    from opsched.heuristics import greedy
    from opsched.problem import Machine, Problem

    g = hta.timeline.graph
    kindless = [op for op in g.ops if op.kind is None]
    comm = [op for op in kindless if all(k.startswith("nccl") for k in op.attrs["kernels"])]
    assert len(comm) == 10 and len(kindless) == 196
    with pytest.warns(UserWarning) as caught:
        out = apply(g, "H100-PCIe", "float16")
    said = " ".join(str(w.message) for w in caught)
    assert "186 ops without a kind" in said and "10 communication ops" in said
    for op in comm:
        assert out[op.name].duration == op.attrs["gpu_time_us"] and out[op.name].kind is None
    priced = [out[op.name] for op in kindless if op not in comm]
    assert all(op.kind is not None and op.duration > 0 for op in priced)
    assert all(op.duration > 0 for op in out.ops if op.kind not in ("view", "input"))
    problem = Problem(out, Machine(units=4))
    assert validate(problem, greedy(problem, "b-level")).valid


def test_the_importers_backward_rows_price_as_backward_convolutions(resnet: ImportedTrace) -> None:
    # the importer writes "x=[..] w=[..] stride=s pad=p (conv2d_bwd_data)" for the cuDNN
    # backward leaves; read as opaque ops (by their FLOPs) they had been priced ~180x their
    # time, the step's kernel time 84x
    from opsched.cost.evaluate import predict_table

    pred = predict_table(resnet.rows, where=RESNET)
    fam = pred.attrs["_opsched"]["family"]
    ops = pred["op"].to_numpy()
    for leaf, half in (("input", "conv2d_bwd_data"), ("weight", "conv2d_bwd_filter")):
        sel = ops == f"aten::cudnn_convolution_backward_{leaf}"
        assert sel.sum() > 300 and set(fam[sel]) == {half}
        ratio = pred["predicted_time_us"][sel].sum() / pred["gpu_time_us"][sel].sum()
        assert 0.8 < ratio < 1.25
    total = pred["predicted_time_us"].sum() / pred["gpu_time_us"].sum()
    assert 0.8 < total < 1.25


def test_an_op_no_aten_op_launched_is_priced_from_its_launches(hta: ImportedTrace) -> None:
    # the fused Adam step (8 multi_tensor_apply launches under an optimizer annotation) had
    # been priced as an opaque op without sizes
    import warnings

    from opsched.cost import apply

    g = hta.timeline.graph
    [step] = [op for op in g.ops if op.name.startswith("Optimizer.step#FusedAdam")]
    assert len(step.attrs["launches"]) == 8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = apply(g, "A100-SXM4-80GB")
    priced = out[step.name]
    assert priced.kind == "fused" and len(priced.attrs["parts"]) == 8
    assert 0.5 < priced.duration / step.attrs["gpu_time_us"] < 1.5  # 848 us against 1,293


def test_foreach_optimizer_ops_are_priced_from_their_launches() -> None:
    # the bf16 transformer's AdamW step runs as 8 aten::_foreach_* ops over TensorLists whose
    # shapes the profiler does not record: 25 us each as opaque ops against 1,124 us
    # measured in all; priced from their multi_tensor_apply launches they come to 1,070 us
    import warnings

    from opsched.cost import apply

    g = import_trace(dataset_path("traces") / "transformer_h200_torch2110_step.pt.trace.json.gz")
    graph = g.timeline.graph
    ops = [op for op in graph.ops if str(op.attrs.get("aten_op", "")).startswith("aten::_foreach")]
    assert len(ops) == 8 and all("launches" in op.attrs for op in ops)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = apply(graph, "H200")
    measured = sum(op.attrs["gpu_time_us"] for op in ops)
    priced = sum(out[op.name].duration for op in ops)
    assert all(out[op.name].kind in ("elementwise", "fused") for op in ops)
    assert 0.75 < priced / measured < 1.25
    # the timing rows carry the same launches, so `cost predict` on them agrees
    rows = g.rows[g.rows["op"].str.startswith("aten::_foreach")]
    assert len(rows) == 8 and (rows["launches"].str.len() > 0).all()
    pred = predict_table(rows, None, "transformer rows")
    assert set(pred.attrs["_opsched"]["family"]) == {"fused"}
    ratio = pred["predicted_time_us"].sum() / rows["gpu_time_us"].sum()
    assert 0.75 < ratio < 1.25
    # a row of a shaped op keeps no launches
    assert (g.rows[g.rows["op"] == "aten::mm"]["launches"] == "").all()
