"""Tests of :mod:`opsched.liveness` on hand-worked cases."""

from __future__ import annotations

import numpy as np

from opsched.ir import Op, OpGraph
from opsched.liveness import memory_curve, peak_memory, release_times


def curve(g: OpGraph, starts, makespan=None):  # type: ignore[no-untyped-def]
    t, m = memory_curve(g, np.array(starts, dtype=np.float64), makespan)
    return t.tolist(), m.tolist()


def level_at(g: OpGraph, starts, when: float) -> int:  # type: ignore[no-untyped-def]
    """Memory in use at time ``when``, read off the step function."""
    t, m = memory_curve(g, np.array(starts, dtype=np.float64))
    i = int(np.searchsorted(t, when, side="right")) - 1
    return int(m[i])


def test_graph_output_held_to_makespan():
    g = OpGraph((Op("a", 1, output_bytes=4, output=True), Op("b", 3, output_bytes=2)))
    starts = [0.0, 1.0]
    # a ends at 1 but is a graph output without consumer: live [0, 4) (b ends at 4);
    # b has no consumer and is not an output: live [1, 4). [0,1): 4; [1,4): 6; then 0
    assert release_times(g, np.array(starts)).tolist() == [4.0, 4.0]
    assert curve(g, starts) == ([0.0, 1.0, 4.0], [4, 6, 0])
    assert peak_memory(g, np.array(starts)) == 6


def test_explicit_makespan_extends_graph_outputs_only():
    g = OpGraph((Op("a", 1, output_bytes=4, output=True), Op("b", 3, output_bytes=2)))
    starts = [0.0, 1.0]
    # makespan 10: a held to 10, b still freed at its end 4
    assert release_times(g, np.array(starts), 10.0).tolist() == [10.0, 4.0]
    assert curve(g, starts, 10.0) == ([0.0, 1.0, 4.0, 10.0], [4, 6, 4, 0])


def test_non_output_without_consumer_freed_at_its_end():
    g = OpGraph((Op("a", 2, output_bytes=3), Op("b", 5)))
    # a live [0, 2) only, although the makespan is 5
    assert release_times(g, np.array([0.0, 0.0])).tolist() == [2.0, 5.0]
    assert curve(g, [0.0, 0.0]) == ([0.0, 2.0], [3, 0])


def test_release_is_latest_consumer_end_not_last_started():
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4, output=True),
            Op("b", 5, deps=("a",)),
            Op("c", 1, deps=("a",)),
        )
    )
    # b [1, 6), c [3, 4): a freed at 6 (b's end), even though c starts later;
    # a is a graph output but has consumers, so it is not held to the makespan
    rel = release_times(g, np.array([0.0, 1.0, 3.0]), 20.0)
    assert rel.tolist() == [6.0, 6.0, 4.0]


def test_zero_duration_ops():
    g = OpGraph(
        (
            Op("z", 0, output_bytes=5, workspace_bytes=9),
            Op("y", 2, deps=("z",), output_bytes=1),
            Op("w", 0, output_bytes=7),
            Op("q", 0, output_bytes=3, output=True),
        )
    )
    starts = [1.0, 1.0, 2.0, 0.0]
    # makespan 3 (y ends at 3). z: workspace never (zero duration), output [1, 3) (y ends 3);
    # y out [1, 3); w: no consumer, not an output, freed at its end = its start -> never live;
    # q: zero-duration graph output, live [0, 3) (to the makespan).
    # [0, 1): 3; [1, 3): 3 + 5 + 1 = 9; from 3: 0
    assert release_times(g, np.array(starts)).tolist() == [3.0, 3.0, 2.0, 3.0]
    assert curve(g, starts) == ([0.0, 1.0, 3.0], [3, 9, 0])


def test_zero_duration_graph_output_at_makespan_is_never_live():
    g = OpGraph((Op("a", 2, output_bytes=1), Op("q", 0, output_bytes=50, output=True)))
    # q at t=2 = makespan: its interval [2, 2) is empty. Peak is a's 1 byte
    assert peak_memory(g, np.array([0.0, 2.0])) == 1


def test_persistent_bytes_always_counted():
    g = OpGraph((Op("a", 2, output_bytes=4),), persistent_bytes=100)
    # nothing before 5: 100; [5, 7): 104; after: 100
    assert curve(g, [5.0]) == ([0.0, 5.0, 7.0], [100, 104, 100])
    assert peak_memory(g, np.array([5.0])) == 104


def test_persistent_bytes_only():
    g = OpGraph((Op("a", 2), Op("b", 0, workspace_bytes=8)), persistent_bytes=42)
    # no tensor is ever live: the curve is the persistent bytes from 0
    assert curve(g, [0.0, 1.0]) == ([0.0], [42])
    assert peak_memory(g, np.array([0.0, 1.0])) == 42


def test_negative_start_moves_first_entry():
    g = OpGraph((Op("a", 1, output_bytes=2),))
    assert curve(g, [-2.0]) == ([-2.0, -1.0], [2, 0])


def test_half_open_intervals_do_not_double_count():
    g = OpGraph((Op("a", 1, output_bytes=5), Op("b", 1, output_bytes=5, workspace_bytes=1)))
    starts = [0.0, 1.0]
    # a [0, 1) and b [1, 2): at t = 1 only b: 5 + 1 = 6, never 5 + 5 + 1
    assert peak_memory(g, np.array(starts)) == 6
    assert level_at(g, starts, 0.5) == 5
    assert level_at(g, starts, 1.0) == 6
    assert level_at(g, starts, 2.0) == 0


def test_workspace_only_while_running():
    g = OpGraph(
        (
            Op("a", 1, output_bytes=2, workspace_bytes=10),
            Op("b", 4, deps=("a",), workspace_bytes=3),
        )
    )
    # a ws 10 [0, 1); a out 2 [0, 5) (b ends at 5); b ws 3 [1, 5)
    # [0, 1): 12; [1, 5): 5; then 0
    assert curve(g, [0.0, 1.0]) == ([0.0, 1.0, 5.0], [12, 5, 0])


def test_empty_graph():
    g = OpGraph((), persistent_bytes=7)
    assert curve(g, []) == ([0.0], [7])
    assert release_times(g, np.array([])).tolist() == []
