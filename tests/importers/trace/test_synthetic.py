"""The importer on small hand-made traces whose graph is worked out by hand."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from opsched.errors import InputError
from opsched.importers.trace import build_step, import_trace, link_launches, parse_trace
from opsched.importers.trace.events import load_trace
from opsched.validate import validate

from .helpers import TraceBuilder


def _timeline(b: TraceBuilder, step: int | None = None):  # type: ignore[no-untyped-def]
    t = parse_trace(b.doc(), "synthetic.json")
    return build_step(t, link_launches(t), step)


def test_two_streams_with_exact_event_wait() -> None:
    # stream 7: A (0-10), C (30-35); stream 20: B (12-20) waits for A's event.
    b = TraceBuilder()
    b.cpu("aten::mm", 0, 5, [[8, 4], [4, 2]])
    b.launch("gemm", 1, 0, 10, stream=7)
    rec = b.runtime("cudaEventRecord", 6)
    wait = b.runtime("cudaStreamWaitEvent", 7)
    b.cpu("aten::relu", 8, 3, [[8, 2]])
    b.launch("relu_kernel", 9, 12, 8, stream=20)
    b.cpu("aten::add", 12, 3, [[8, 2], [8, 2]])
    b.launch("add_kernel", 13, 30, 5, stream=7)
    b.sync(stream=20, wait_on=7, wait_corr=wait, record_corr=rec, ts=11)
    tl = _timeline(b)
    g = tl.graph
    assert g.names == ["aten::mm#1", "aten::relu#1", "aten::add#1"]
    assert g["aten::relu#1"].deps == ("aten::mm#1",)
    assert g["aten::relu#1"].attrs["dep_kinds"] == {"aten::mm#1": "event"}
    assert g["aten::add#1"].attrs["dep_kinds"] == {"aten::mm#1": "stream"}
    assert g["aten::mm#1"].kind == "matmul" and g["aten::mm#1"].output_bytes == 8 * 2 * 4
    assert g.attrs["streams"] == [7, 20]
    s = tl.schedule
    assert [(o.start, o.end, o.unit) for o in s.ops] == [(0, 10, 0), (12, 20, 1), (30, 35, 0)]
    assert validate(tl.problem, s).valid


def test_wait_without_sync_records_links_other_streams() -> None:
    # no cuda_sync events: the wait links the last op launched on every other stream before
    # the wait to the next op the waiting thread launches
    b = TraceBuilder()
    b.cpu("aten::mul", 0, 3, [[4]])
    b.launch("k1", 1, 0, 4, stream=7)
    b.runtime("cudaStreamWaitEvent", 4)
    b.cpu("aten::neg", 5, 3, [[4]])
    b.launch("k2", 6, 10, 2, stream=21)
    tl = _timeline(b)
    assert tl.graph["aten::neg#1"].attrs["dep_kinds"] == {"aten::mul#1": "event"}


def test_host_sync_edges_and_a_contradicted_edge_is_dropped() -> None:
    b = TraceBuilder()
    b.cpu("aten::mul", 0, 3, [[4]])
    b.launch("k1", 1, 0, 4, stream=7)  # ends at 4
    b.cpu("aten::neg", 1, 2, [[4]], tid=2)
    b.launch("k2", 2, 1, 50, stream=20, tid=2)  # still running when the sync returns
    b.runtime("cudaStreamSynchronize", 5, 5)  # returns at 10
    b.cpu("aten::exp", 11, 3, [[4]])
    b.launch("k3", 12, 20, 2, stream=20)
    b.cpu("aten::abs", 15, 3, [[4]])
    b.launch("k4", 16, 30, 2, stream=7)
    g = _timeline(b).graph
    # k1 finished before the sync returned: it precedes the first launch on the other stream
    assert g["aten::exp#1"].attrs["dep_kinds"] == {"aten::neg#1": "stream", "aten::mul#1": "host"}
    # k2 had not finished: no host edge from it; mul -> abs is plain stream order
    assert g["aten::abs#1"].attrs["dep_kinds"] == {"aten::mul#1": "stream"}


def test_interleaved_frames_split_into_runs_and_steps() -> None:
    b = TraceBuilder()
    b.cpu("ProfilerStep#3", 0, 100, cat="user_annotation")
    b.cpu("ProfilerStep#4", 100, 100, cat="user_annotation")
    b.cpu("aten::cat", 0, 50, [[2, 3], [2, 3]])
    b.launch("copy_a", 1, 0, 5)
    b.cpu("aten::sin", 10, 5, [[6]], tid=2)
    b.launch("sin_k", 11, 6, 5, tid=2)
    b.launch("copy_b", 20, 12, 5)
    b.cpu("aten::cos", 110, 5, [[6]])
    b.launch("triton_poi_fused_cos_0", 111, 120, 3)
    tl = _timeline(b)
    assert tl.graph.names == ["aten::cat#1.1", "aten::sin#1", "aten::cat#1.2"]
    assert tl.graph["aten::cat#1.1"].duration == 5 and tl.step == 3
    assert validate(tl.problem, tl.schedule).valid
    tl4 = _timeline(b, 4)
    assert tl4.graph.names == ["aten::cos#1"] and tl4.graph.ops[0].attrs["triton"] is True
    with pytest.raises(InputError, match=r"no ProfilerStep#9.*steps: 3, 4"):
        _timeline(b, 9)


def test_overlapping_kernels_on_a_stream_are_clamped_and_stay_valid() -> None:
    b = TraceBuilder()
    b.cpu("aten::mul", 0, 3, [[4]])
    b.launch("k1", 1, 0, 10)
    b.cpu("aten::neg", 4, 3, [[4]])
    b.launch("k2", 5, 8, 4)  # starts 2 us before k1 ends (programmatic dependent launch)
    tl = _timeline(b)
    assert tl.schedule.info["clamped"] == 1
    assert [o.start for o in tl.schedule.ops] == [0, 10]
    assert validate(tl.problem, tl.schedule).valid


def test_kernel_without_cpu_op_is_a_graph_op_but_not_a_row(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.cpu("## optimizer ##", 0, 20, cat="user_annotation")
    b.launch("multi_tensor_apply_kernel", 2, 0, 7)
    b.cpu("aten::mm", 5, 5, [[2, 2], [2, 2]])
    b.launch("gemm", 6, 8, 3)
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(json.dumps(b.doc()).encode()))
    imp = import_trace(p)
    assert imp.timeline.graph.names == ["## optimizer ###1", "aten::mm#1"]
    assert list(imp.rows["op"]) == ["aten::mm"] and imp.rows["gpu"].iloc[0] == "GPU-T"
    assert imp.rows["flops"].iloc[0] == 2 * 2 * 2 * 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"{", "invalid JSON"),
        (b'{"a": 1}', "no 'traceEvents'"),
        (gzip.compress(b'{"traceEvents": []}', mtime=0)[:-6], "truncated or corrupt gzip"),
        (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "x", "dur": 1}]}', "bad ts/dur"),
    ],
)
def test_bad_files(tmp_path: Path, content: bytes, message: str) -> None:
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(InputError, match=message) as e:
        load_trace(p)
    assert str(p) in str(e.value)


def test_trace_without_gpu_work(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.cpu("aten::mm", 0, 5, [[2, 2], [2, 2]])
    p = tmp_path / "cpu_only.json"
    p.write_text(json.dumps(b.doc()))
    with pytest.raises(InputError, match="no GPU work"):
        import_trace(p)


def test_an_event_whose_category_is_not_a_string_is_skipped() -> None:
    # a list or object as "cat" used to end in "unhashable type" (an internal error)
    b = TraceBuilder()
    b.cpu("aten::mul", 0, 3, [[4]])
    b.launch("k1", 1, 0, 4)
    b.cpu("aten::neg", 5, 3, [[4]])
    b.launch("k2", 6, 10, 2)
    doc = b.doc()
    odd = dict(doc["traceEvents"][0], cat=["cpu_op"], name="aten::odd")
    doc["traceEvents"].append(odd)
    t = parse_trace(doc, "odd.json")
    tl = build_step(t, link_launches(t), None)
    assert tl.graph.names == ["aten::mul#1", "aten::neg#1"]


def test_a_step_on_two_gpus_is_imported_one_gpu_at_a_time() -> None:
    # the same stream id on two GPUs: merged, their ops had shared one stream's order
    b = TraceBuilder()
    b.cpu("aten::mm", 0, 5, [[8, 4], [4, 2]])
    b.launch("gemm", 1, 0, 10, stream=7, device=0)
    b.cpu("aten::mm", 6, 5, [[8, 4], [4, 2]], tid=2)
    b.launch("gemm", 7, 2, 10, stream=7, tid=2, device=1)
    t = parse_trace(b.doc(), "two.json")
    with pytest.raises(InputError, match="the step ran on GPUs 0, 1: give --device"):
        build_step(t, link_launches(t))
    for dev in (0, 1):
        tl = build_step(t, link_launches(t), device=dev)
        (op,) = tl.schedule.ops
        assert tl.graph.num_ops == 1 and (op.start, op.end) == (0.0, 10.0)  # one gemm each
        assert validate(tl.problem, tl.schedule).valid
    with pytest.raises(InputError, match="--device 3: the step ran on GPU"):
        build_step(t, link_launches(t), device=3)


def test_an_autograd_profiler_export_is_named() -> None:
    events = [{"ph": "X", "name": "aten::mm", "pid": "CPU functions", "tid": 1, "ts": 0,
               "dur": 5},
              {"ph": "X", "name": "gemm", "pid": "CUDA functions", "tid": 1, "ts": 1,
               "dur": 3}]  # fmt: skip
    with pytest.raises(InputError, match="an autograd-profiler export"):
        parse_trace(events, "old.json")
    # malformed deviceProperties name no GPU, they do not stop the import
    b = TraceBuilder()
    b.cpu("aten::relu", 0, 3, [[8, 2]])
    b.launch("relu_kernel", 1, 2, 4)
    doc = b.doc() | {"deviceProperties": 5}
    assert _timeline_of(doc).graph.num_ops == 1


def _timeline_of(doc):  # type: ignore[no-untyped-def]
    t = parse_trace(doc, "synthetic.json")
    return build_step(t, link_launches(t))


def test_an_autocast_op_takes_the_dtype_its_kernels_ran_in() -> None:
    # torch.autocast: aten::linear is recorded with its float32 tensors, casts them
    # (aten::to -> aten::copy_, a conversion kernel) and runs aten::addmm on bfloat16 ones,
    # which launches the GEMM. The graph op had been a float32 GEMM, priced 8-16x too slow
    # (the H200 transformer step: 5,043 us for 637 measured); its dtype now follows addmm.
    b = TraceBuilder()
    b.cpu("aten::linear", 0, 20, [[64, 32], [16, 32], [16]], ["float", "float", "float"])
    b.cpu("aten::to", 1, 4, [[16, 32], [], [], [], [], []], ["float"] + [""] * 5)
    b.cpu("aten::copy_", 2, 2, [[16, 32], [16, 32], []], ["c10::BFloat16", "float", ""])
    b.launch("bfloat16_copy_kernel", 2.5, 0, 1)
    b.cpu("aten::addmm", 6, 10, [[16], [64, 32], [32, 16], [], []],
          ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])  # fmt: skip
    b.launch("gemm_bf16", 7, 2, 10)
    g = _timeline(b).graph
    (op,) = g.ops
    assert op.kind == "matmul" and (op.attrs["M"], op.attrs["N"], op.attrs["K"]) == (64, 16, 32)
    assert op.attrs["dtype"] == "bfloat16" and op.attrs["dtype_from"] == "aten::addmm"
    assert op.output_bytes == 64 * 16 * 2
    # without autocast (a float32 addmm) nothing changes
    b = TraceBuilder()
    b.cpu("aten::linear", 0, 20, [[64, 32], [16, 32], [16]], ["float", "float", "float"])
    b.cpu("aten::addmm", 6, 10, [[16], [64, 32], [32, 16], [], []],
          ["float", "float", "float", "Scalar", "Scalar"])  # fmt: skip
    b.launch("gemm_fp32", 7, 2, 10)
    (op,) = _timeline(b).graph.ops
    assert op.attrs["dtype"] == "float32" and "dtype_from" not in op.attrs
    assert op.output_bytes == 64 * 16 * 4
