"""The page in a real browser: Debian's Chromium, driven by Playwright (`nox -s browser`).

Never `playwright install`: the browser is /usr/bin/chromium (or $PT2KIT_CHROMIUM).
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rgtest import full_stream, header

from pt2kit.reportgen import collect, render
from pt2kit.schema import read_stream
from pt2kit.schema.store import atomic_write

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("PT2KIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (the browser session needs it)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def test_page_renders_every_section_and_runs_no_planted_script(browser, tmp_path):
    data = full_stream(tmp_path / "store")
    out = tmp_path / "report.html"
    atomic_write(out, render(collect(read_stream(["-"], stdin=io.BytesIO(data))), "html", out_dir=tmp_path))
    page = browser.new_page()
    console, dialogs, requests = [], [], []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_load_state("load")

    ids = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
    assert ids == ["fails", "summary", "diffs", "crashes", "repros", "script", "violations", "guards", "kernels", "bench",
                   "graphs", "errors"]  # what fails first
    assert page.locator("tr.fails").count() == 1 and "m.py" in page.locator("tr.fails td").first.inner_text()
    cards = page.eval_on_selector_all("[data-count]", "els => Object.fromEntries(els.map(e => "
                                      "[e.dataset.count, e.querySelector('b').textContent]))")
    assert cards == {"findings": "4", "failing_diffs": "1", "breaks": "1", "recompiles": "1",
                     "nonfinite_kernels": "1", "crashes": "1", "errors": "1"}
    assert page.locator("tr.violation").count() == 4 and page.locator("tr.diff").count() == 2
    # plots drew: three inline SVGs with real size and paths in them
    boxes = page.eval_on_selector_all(".plot svg", "els => els.map(e => [e.getBoundingClientRect().width, "
                                      "e.getBoundingClientRect().height, e.querySelectorAll('path').length])")
    assert len(boxes) == 3 and all(w > 100 and h > 50 and paths > 3 for w, h, paths in boxes)
    img = page.locator("img[alt^='error heatmap']")
    assert img.count() == 1 and img.evaluate("e => e.complete && e.naturalWidth") == 1
    # the planted <script> and onerror handler are text, not code
    assert page.evaluate("window.__pwned === undefined")
    assert "<script>window.__pwned=1</script>" in page.locator("#violations h3").first.inner_text()
    assert dialogs == [] and console == [], console
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    page.close()


def test_what_fails_fits_a_1280_pixel_window(browser, tmp_path):
    # issue 58: in Chromium at 1280 px the table ran past the window, its repro column cut off (a store path of
    # 64 hex digits and a graph's source line will not wrap); a failure with both, as pt2kit triage's page has it
    from pt2kit.schema import Bisect, BlobRef, Captured, Diff, Divergence, Model, Repro
    from pt2kit.schema.stream import RecordWriter

    out = io.BytesIO()
    w = RecordWriter(out, run="run-kd")
    header(w, "minify", tmp_path / "store")
    ref = BlobRef(path=f"blobs/b0/{'b0' * 32}.py", sha256="b0" * 32, size=1, media_type="text/x-python")
    w.emit_new(Model, model="train.py[0/0]", file="/m.py", captured=Captured(
        command=["python", "train.py"], compile_id="0/0", called_from="/home/me/project/examples/train.py:32", code=ref))
    w.emit_new(Diff, model="train.py[0/0]", output="out[0]", ref="eager", test="inductor", atol=1e-5, rtol=1.3e-6,
               passed=False)
    w.emit_new(Divergence, model="train.py[0/0]", node="relu", op="aten.relu.default",
               source=f"/tmp/tri1/store/blobs/b0/{'b0' * 32}.py:142",
               code='input_2: "f32[8, 32]" = torch.nn.functional.relu(input_1, inplace = False);  input_1 = None')
    w.emit_new(Repro, model="train.py[0/0]", path=ref, failure="accuracy", nodes_before=5, nodes_after=1,
               reproduces=True, ops=["aten.relu.default"], reproduced=3, runs=3,
               output="/tmp/tri1/repro.py")
    w.emit_new(Bisect, model="train.py[0/0]", backend="inductor", found=True, subsystem="lowerings", application=0,
               verdict="Inductor: lowerings, application 0 of 1 (relu: aten.relu.default)",
               env={"TORCH_BISECT_BACKEND": "inductor", "TORCH_BISECT_SUBSYSTEM": "lowerings", "TORCH_BISECT_MAX": "0"})
    html = tmp_path / "report.html"
    atomic_write(html, render(collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue()))), "html", out_dir=tmp_path))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(html.as_uri())
    right = page.eval_on_selector("#fails table", "t => [t.getBoundingClientRect().right, "
                                  "t.parentElement.getBoundingClientRect().right]")
    assert right[0] <= right[1] <= 1280, right  # within the page's column, not only the window
    cells = page.eval_on_selector_all("tr.fails td", "els => els.map(e => e.getBoundingClientRect().right)")
    assert len(cells) == 5 and max(cells) <= 1280, cells  # the repro column too
    assert page.locator("tr.fails td").nth(2).inner_text().startswith("/home/me/project/examples/train.py:32")
    page.close()
