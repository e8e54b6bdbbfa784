"""The seed's three-mode visual demo: one self-contained HTML page.

Tab 1 steps through the greedy scheduling loop on the seed graph (:func:`trace_greedy`,
checked against :func:`opsched.heuristics.greedy`); tab 2 compares parallel, memory-aware and
pipeline schedules of one graph (:func:`compare_strategies`); tab 3 shows the critical-path
optimisation of the program A..E. :func:`write_page` computes it all and writes the file;
``opsched demo page -o demo.html`` does the same from the command line.
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "admission_interval": "opsched.demo_page.strategies",
    "compare_strategies": "opsched.demo_page.strategies",
    "inception_block": "opsched.demo_page.strategies",
    "layered_layout": "opsched.demo_page.trace",
    "page_data": "opsched.demo_page.build",
    "render_page": "opsched.demo_page.build",
    "trace_greedy": "opsched.demo_page.trace",
    "unroll_micro_batches": "opsched.demo_page.strategies",
    "write_page": "opsched.demo_page.build",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.demo_page.build import page_data, render_page, write_page
    from opsched.demo_page.strategies import (
        admission_interval,
        compare_strategies,
        inception_block,
        unroll_micro_batches,
    )
    from opsched.demo_page.trace import layered_layout, trace_greedy


__all__ = [
    "admission_interval",
    "compare_strategies",
    "inception_block",
    "layered_layout",
    "page_data",
    "render_page",
    "trace_greedy",
    "unroll_micro_batches",
    "write_page",
]
