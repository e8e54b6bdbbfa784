"""Tests of :func:`opsched.solver.choose_scaling`: the integer ticks and memory quanta given
to CP-SAT must be exact when they can be, and otherwise conservative (durations and sizes
rounded up, the cap rounded down)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsched.ir import Op, OpGraph
from opsched.solver import Scaling, choose_scaling


def graph(
    durations: list[float],
    outputs: list[int] | None = None,
    workspaces: list[int] | None = None,
    persistent: int = 0,
) -> OpGraph:
    outputs = outputs or [0] * len(durations)
    workspaces = workspaces or [0] * len(durations)
    ops = tuple(
        Op(f"o{i}", d, output_bytes=o, workspace_bytes=w)
        for i, (d, o, w) in enumerate(zip(durations, outputs, workspaces, strict=True))
    )
    return OpGraph(ops, persistent_bytes=persistent)


# ----------------------------------------------------------------------------- time


def test_integer_durations_are_their_own_ticks() -> None:
    s = choose_scaling(graph([1, 2, 3, 0]))
    assert s.time_scale == 1
    assert s.durations == [1, 2, 3, 0]
    assert s.time_exact and s.max_time_error == 0.0
    assert s.to_time(5) == 5.0


@pytest.mark.parametrize(
    ("durations", "scale", "ticks"),
    [
        ([0.5, 0.25], 100, [50, 25]),  # 0.25 needs two decimals
        ([0.1, 0.2], 10, [1, 2]),  # 0.1 * 10 is 1 up to float noise, which is tolerated
        ([0.125, 2], 1000, [125, 2000]),
        ([1.5, 2.25], 100, [150, 225]),  # the module docstring's example
        ([0.0025], 10_000, [25]),
        ([1e-6, 1], 10**6, [1, 10**6]),  # six decimals: the finest exact scale
        ([0.5, 0], 10, [5, 0]),
    ],
)
def test_decimal_durations_scale_exactly(
    durations: list[float], scale: int, ticks: list[int]
) -> None:
    s = choose_scaling(graph(durations))
    assert s.time_scale == scale
    assert s.durations == ticks
    assert s.time_exact
    assert s.max_time_error == 0.0
    assert [s.to_time(t) for t in s.durations] == pytest.approx(durations, rel=1e-12)


def test_inexact_durations_are_rounded_up() -> None:
    # 1/3 and 2/3 are no multiple of 10^-6: ticks of serial_time / 10^6 = 1 / 10^6.
    # 1/3 -> 333333.33.. ticks, up to 333334 (error 2/3 * 10^-6); 2/3 -> 666666.67, up to
    # 666667 (error 1/3 * 10^-6)
    s = choose_scaling(graph([1 / 3, 2 / 3]))
    assert not s.time_exact
    assert s.time_scale == 10**6
    assert s.durations == [333_334, 666_667]
    assert s.max_time_error == pytest.approx(2 / 3 * 1e-6, rel=1e-6)
    assert s.max_time_error == max(
        t / s.time_scale - d for t, d in zip(s.durations, [1 / 3, 2 / 3], strict=True)
    )


def test_seven_decimals_are_inexact() -> None:
    # 1e-7 is finer than 10^-6: total 1.0000001, scale 10^6 / 1.0000001 ticks per unit;
    # 1e-7 is 0.0999.. ticks -> 1 tick, error 1/scale - 1e-7 = 9.000001e-7
    s = choose_scaling(graph([1e-7, 1]))
    assert not s.time_exact
    assert s.time_scale == pytest.approx(1e6 / 1.0000001)
    assert s.durations == [1, 10**6]
    assert s.max_time_error == pytest.approx(1 / s.time_scale - 1e-7)


def test_zero_durations_and_empty_graph() -> None:
    s = choose_scaling(graph([0, 0]))
    assert (s.time_scale, s.durations, s.time_exact) == (1, [0, 0], True)
    e = choose_scaling(OpGraph(()))
    assert e.durations == [] and e.exact and e.cap is None and e.memory_quantum == 1


def _decimals(k: int, places: int) -> int:
    """Decimal places that ``k / 10**places`` really needs (trailing zeros of k dropped)."""
    while places and k % 10 == 0:
        k //= 10
        places -= 1
    return places if k else 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 6)), min_size=1, max_size=8))
def test_decimals_up_to_six_places_are_exact(pairs: list[tuple[int, int]]) -> None:
    durations = [k / 10**j for k, j in pairs]
    s = choose_scaling(graph(durations))
    assert s.time_exact
    assert s.time_scale == 10 ** max(_decimals(k, j) for k, j in pairs)
    for t, (k, j) in zip(s.durations, pairs, strict=True):
        assert t * 10**j == k * s.time_scale  # the exact tick count


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 12), st.sampled_from([3, 7, 9, 11, 13])),
        min_size=1,
        max_size=8,
    )
)
def test_inexact_scaling_never_shortens_an_op(pairs: list[tuple[int, int, int]]) -> None:
    # durations n + r/q below 51: no multiple of 10^-6 unless r = 0 (regression: a relative
    # exactness tolerance used to absorb whole fractions of a tick for long durations)
    durations = [n + (r % q) / q for n, r, q in pairs]
    s = choose_scaling(graph(durations))
    err = -math.inf
    for t, d in zip(s.durations, durations, strict=True):
        real = t / s.time_scale
        assert real >= d - 1e-9 / s.time_scale  # rounded up (up to a billionth of a tick)
        assert real - d <= 1 / s.time_scale + 1e-12  # by less than one tick
        err = max(err, real - d)
    if not s.time_exact:
        assert sum(s.durations) <= 10**6 + len(durations)  # about 10^6 ticks in all
        # the largest rounding (float noise may make it a hair below zero)
        assert s.max_time_error == pytest.approx(err, abs=1e-12)
    else:  # only when every duration is a whole number
        assert all(float(d).is_integer() for d in durations)


@pytest.mark.parametrize("d", [1234.5678901, 33286 / 3, 1e9 + 0.5])
def test_large_duration_with_a_fraction_is_not_rounded_down(d: float) -> None:
    s = choose_scaling(graph([d, 1]))
    assert s.durations[0] / s.time_scale >= d


# ----------------------------------------------------------------------------- memory


def test_memory_quantum_is_the_gcd() -> None:
    # the module docstring: 4096 and 8192 B under a 65536 B cap -> quanta of 4096 B
    s = choose_scaling(graph([1.5, 2.25], [4096, 8192]), memory_cap=65536)
    assert (s.memory_quantum, s.sizes_out, s.cap, s.memory_exact) == (4096, [1, 2], 16, True)
    assert s.exact
    # workspaces count: gcd(6, 4) = 2
    s = choose_scaling(graph([1, 1], [6, 0], [4, 0]))
    assert (s.memory_quantum, s.sizes_out, s.sizes_ws, s.cap) == (2, [3, 0], [2, 0], None)
    # so does the free part of the cap: gcd(4, 8, 13 - 3) = 2; the cap becomes 10 / 2 = 5
    s = choose_scaling(graph([1, 1], [4, 8], persistent=3), memory_cap=13)
    assert (s.memory_quantum, s.sizes_out, s.cap) == (2, [2, 4], 5)
    # a cap of exactly the persistent bytes: no free memory, gcd of the sizes only
    s = choose_scaling(graph([1, 1], [4, 8], persistent=3), memory_cap=3)
    assert (s.memory_quantum, s.sizes_out, s.cap) == (4, [1, 2], 0)
    # no sizes at all: quanta of one byte
    assert choose_scaling(graph([1])).memory_quantum == 1


def test_cap_below_persistent_bytes() -> None:
    # 100 B always resident and a 50 B cap: no free memory at all, reported as cap -1; the
    # quantum comes from the sizes alone (gcd(6, 4) = 2)
    s = choose_scaling(graph([1, 1], [6, 0], [4, 0], persistent=100), memory_cap=50)
    assert s.cap == -1
    assert s.memory_quantum == 2
    assert s.memory_exact


def test_huge_sizes_use_inexact_quanta() -> None:
    b = 2**50
    sizes = [b + 1, b + 3]  # coprime: the gcd is 1 and 2^51 quanta would remain
    cap = 3 * b + 7
    s = choose_scaling(graph([1, 1], sizes), memory_cap=cap)
    total = sum(sizes) + cap
    assert not s.memory_exact and not s.exact
    assert s.time_exact  # time is not affected
    assert s.memory_quantum == math.ceil(total / 2**31) == 2_621_441
    for q_size, size in zip(s.sizes_out, sizes, strict=True):
        assert q_size * s.memory_quantum >= size > (q_size - 1) * s.memory_quantum  # up
    assert s.cap is not None
    assert s.cap * s.memory_quantum <= cap < (s.cap + 1) * s.memory_quantum  # down
    assert s.sizes_out == [429_496_566, 429_496_566]
    assert s.to_dict() == {
        "time_scale": 1,
        "time_exact": True,
        "max_time_error": 0.0,
        "memory_quantum": 2_621_441,
        "memory_exact": False,
    }


def test_huge_sizes_with_a_common_factor_stay_exact() -> None:
    b = 2**50
    s = choose_scaling(graph([1, 1], [b, 2 * b]), memory_cap=4 * b)
    assert (s.memory_quantum, s.sizes_out, s.cap, s.memory_exact) == (b, [1, 2], 4, True)


def test_exactness_threshold_is_2_to_the_40_quanta() -> None:
    # 2^40 quanta of one byte in all: still exact; one more byte: rounded
    s = choose_scaling(graph([1, 1], [2**40 - 1, 1]))
    assert s.memory_exact and s.memory_quantum == 1
    s = choose_scaling(graph([1, 1], [2**40, 1]))
    assert not s.memory_exact
    assert s.memory_quantum == math.ceil((2**40 + 1) / 2**31) == 513
    assert s.sizes_out == [math.ceil(2**40 / 513), 1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**45), min_size=1, max_size=6),
    st.lists(st.integers(0, 2**45), min_size=1, max_size=6),
    st.integers(0, 2**44),
    st.one_of(st.none(), st.integers(0, 2**47)),
)
def test_memory_rounding_is_conservative(
    outs: list[int], wss: list[int], persistent: int, cap: int | None
) -> None:
    n = min(len(outs), len(wss))
    s: Scaling = choose_scaling(graph([1] * n, outs[:n], wss[:n], persistent), memory_cap=cap)
    q = s.memory_quantum
    assert q >= 1
    for scaled, size in [
        *zip(s.sizes_out, outs[:n], strict=True),
        *zip(s.sizes_ws, wss[:n], strict=True),
    ]:
        assert scaled * q >= size  # never smaller than the real size
        if s.memory_exact:
            assert scaled * q == size
    if cap is None:
        assert s.cap is None
    elif cap < persistent:
        assert s.cap == -1
    else:
        assert s.cap is not None and 0 <= s.cap * q <= cap - persistent  # never larger
        if s.memory_exact:
            assert s.cap * q == cap - persistent
    if s.memory_exact:
        assert (sum(s.sizes_out) + sum(s.sizes_ws) + max(s.cap or 0, 0)) <= 2**40


def test_sub_nanosecond_durations_are_not_rounded_to_zero_ticks():
    # 5e-10 lies within 1e-9 of 0: an "exact" scale of 1 tick per unit put b at a's start
    from opsched.ir import Op, OpGraph
    from opsched.problem import Machine, Problem
    from opsched.solver import solve_cpsat
    from opsched.validate import validate

    g = OpGraph((Op("a", 5e-10), Op("b", 5e-10, deps=("a",))))
    p = Problem(g, Machine(units=1))
    r = solve_cpsat(p, time_limit=5)
    assert r.makespan == pytest.approx(1e-9) and validate(p, r).valid
    assert r.ops[1].start >= r.ops[0].end - 1e-18
