"""Builders for small hand-made Kineto traces (current schema)."""

from __future__ import annotations

from typing import Any


class TraceBuilder:
    """Append CPU ops, launches and GPU activities; ``doc()`` returns the trace document."""

    def __init__(self, device_name: str = "GPU-T") -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 100
        self.device_name = device_name

    def cpu(
        self,
        name: str,
        ts: float,
        dur: float,
        dims: Any = None,
        types: Any = None,
        tid: int = 1,
        cat: str = "cpu_op",
        concrete: Any = None,
    ) -> None:
        args: dict[str, Any] = {}
        if dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = types or ["float"] * len(dims)
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 1,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )

    def runtime(self, name: str, ts: float, dur: float = 1, tid: int = 1) -> int:
        self.corr += 1
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": name,
                "pid": 1,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": {"correlation": self.corr},
            }
        )
        return self.corr

    def launch(
        self,
        kernel: str,
        cpu_ts: float,
        gpu_ts: float,
        dur: float,
        stream: int = 7,
        tid: int = 1,
        cat: str = "kernel",
        device: int = 0,
    ) -> int:
        c = self.runtime("cudaLaunchKernel", cpu_ts, 1, tid)
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": kernel,
                "pid": device,
                "tid": stream,
                "ts": gpu_ts,
                "dur": dur,
                "args": {"correlation": c, "stream": stream, "device": device},
            }
        )
        return c

    def sync(self, stream: int, wait_on: int, wait_corr: int, record_corr: int, ts: float) -> None:
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_sync",
                "name": "Stream Wait Event",
                "pid": 0,
                "tid": stream,
                "ts": ts,
                "dur": 0,
                "args": {
                    "stream": stream,
                    "correlation": wait_corr,
                    "wait_on_stream": wait_on,
                    "wait_on_cuda_event_record_corr_id": record_corr,
                },
            }
        )

    def doc(self) -> dict[str, Any]:
        return {
            "deviceProperties": [{"id": 0, "name": self.device_name}],
            "traceEvents": list(self.events),
        }
