"""The demo page in a real browser: headless Chromium driven by Playwright.

CI needs ``apt-get install -y chromium`` (Debian's build, at /usr/bin/chromium) and the
``playwright`` Python package (no ``playwright install``: the system browser is used).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opsched.demo_page.build import write_page

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason="Debian's chromium is not installed (apt-get install -y chromium)",
)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str]]]:
    sync_api = pytest.importorskip("playwright.sync_api")
    out = tmp_path_factory.mktemp("page") / "demo.html"
    write_page(out, micro_batches=3, time_limit=5)
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.on(
            "console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None
        )
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        requests: list[str] = []
        pg.on("request", lambda r: requests.append(r.url))
        pg.goto(Path(out).as_uri())
        pg.wait_for_load_state("load")
        assert requests == [Path(out).as_uri()], requests  # nothing but the file itself
        yield pg, errors
        browser.close()


def clock(pg: Any) -> float:
    return float(pg.inner_text("#clock"))


def test_loop_tab_steps_plays_and_resets(page: tuple[Any, list[str]]) -> None:
    pg, errors = page
    pg.click("#tab-loop")
    assert pg.is_visible("#panel-loop") and not pg.is_visible("#panel-strategies")
    assert clock(pg) == 0
    assert pg.locator("#loop-dag svg g.node").count() == 7
    assert pg.locator("#loop-dag g.node.ready").count() == 1  # only Input has nothing pending
    pg.click("#btn-step")  # t = 0: Input starts on unit 0
    assert clock(pg) == 0 and "Input" in pg.inner_text("#loop-units")
    assert pg.locator("#loop-gantt g.bar").count() == 1
    pg.click("#btn-step")  # t = 1: Input done, Conv1 starts
    assert clock(pg) == 1
    pg.click("#btn-step")  # t = 2: BN and Conv2 on the two units
    assert clock(pg) == 2
    assert pg.locator("#loop-dag g.node.running").count() == 2
    assert "BN \u2192 unit 0" in pg.inner_text("#loop-phases")
    for _ in range(10):  # past the end: the clock stops at the makespan
        if pg.is_enabled("#btn-step"):
            pg.click("#btn-step")
    assert clock(pg) == 6 and "makespan 6" in pg.inner_text("#loop-phases")
    assert pg.locator("#loop-dag g.node.done").count() == 7
    pg.click("#btn-reset")
    assert clock(pg) == 0 and pg.locator("#loop-gantt g.bar").count() == 0
    pg.click("#btn-play")
    pg.wait_for_function("Number(document.getElementById('clock').textContent) >= 2",
                         timeout=10000)  # fmt: skip
    pg.click("#btn-play")  # pause
    paused = clock(pg)
    pg.wait_for_timeout(1200)
    assert clock(pg) == paused
    pg.click("#btn-reset")
    assert clock(pg) == 0
    assert errors == []


def test_strategies_tab(page: tuple[Any, list[str]]) -> None:
    pg, errors = page
    pg.click("#tab-strategies")
    assert pg.is_visible("#panel-strategies") and not pg.is_visible("#panel-loop")
    for k in ("parallel", "memory", "pipeline"):
        card = pg.locator(f"#strategy-{k}")
        assert card.is_visible()
        assert card.locator(".gantt g.bar").count() >= 9
        assert card.locator(".memory path.mem").count() == 1
    metrics = pg.inner_text("#strategy-metrics")
    assert "initiation interval" in metrics and "1.53 MiB" in metrics and "valid" in metrics
    assert "INVALID" not in metrics
    assert errors == []


def test_critical_path_tab(page: tuple[Any, list[str]]) -> None:
    pg, errors = page
    pg.click("#tab-critical")
    assert pg.is_visible("#panel-critical") and not pg.is_visible("#panel-strategies")
    assert "5 \u2192 3: 40 % shorter" in pg.inner_text("#critical-summary")
    assert pg.locator("#critical-before-dag g.node.crit").count() == 5
    assert pg.locator("#critical-after-dag g.node.crit").count() == 3
    assert pg.locator("#critical-after-dag path.edge").count() == 4
    assert "A -> C (RAW on a)" in pg.inner_text("#critical-edges")
    assert errors == []


def test_ops_without_a_unit_get_rows_of_their_own(
    page: tuple[Any, list[str]], tmp_path: Path
) -> None:
    """Two copies that hold no unit run at once: they had been drawn over each other on one
    "no unit" row; each now takes a row ("lane") of its own."""
    from opsched.ir import Op, OpGraph

    g = OpGraph(
        [
            Op("a", 2.0, output_bytes=10),
            Op("copy1", 3.0, deps=("a",), output_bytes=10, demands={}),
            Op("copy2", 3.0, deps=("a",), output_bytes=10, demands={}),
            Op("b", 1.0, deps=("copy1", "copy2")),
        ],
        name="copies",
    )
    out = tmp_path / "demo.html"
    write_page(out, graph=g, micro_batches=2, time_limit=5)
    ctx = page[0].context.browser.new_context()  # the module's browser: one per process
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(out.as_uri())
    pg.click("#tab-strategies")
    card = pg.locator("#strategy-parallel .gantt")
    ys = [
        float(card.locator(f'g.bar[data-op="{name}"] rect').get_attribute("y") or "nan")
        for name in ("copy1", "copy2")
    ]
    labels = card.locator("svg > text").all_text_contents()
    piped = pg.locator("#strategy-pipeline .gantt svg > text").all_text_contents()
    ctx.close()
    assert errors == []
    assert ys[0] != ys[1]  # not on one row
    assert "no unit" in labels and "no unit 2" in labels and "admit" not in labels
    assert "admit" in piped and "no unit 2" in piped  # the admission chain keeps its own row
