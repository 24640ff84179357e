"""The report's operator section (task operation) from an operation case's rows: a table per operator with its
oplibs side by side and the library's speed-up, an incorrect row listed and marked, the roofline plot under the
vendor's roofs (or a note naming the vendor.yaml key that has none), rendered in a real headless Chromium."""

from __future__ import annotations

import base64
import json
import re

from browser import Browser
from case_runners.views.report.sections import render_report
from operation_rows import run, standard_rows, summary_case

SECTION_FACTS = """JSON.stringify({
  sections: [...document.querySelectorAll("section")].map(s => s.id),
  images: [...document.querySelectorAll("#operation img")].map(i => [i.naturalWidth, i.naturalHeight, i.alt]),
  tables: [...document.querySelectorAll("#operation h4")].map(h => h.textContent),
  bad: [...document.querySelectorAll("#operation td.bad")].map(td => [td.textContent, getComputedStyle(td).color]),
  warn: [...document.querySelectorAll("#operation p.warn")].map(p => p.textContent),
  headers: [...document.querySelectorAll("#operation table")].map(t => t.rows[0].cells.length),
})"""
RED = "rgb(166, 27, 27)"  # td.bad's colour (views/report/html.py CSS)


def section(page: str, sid: str) -> str:
    found = re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S)
    assert found, f"no section {sid}"
    return found.group(1)


def test_operators_side_by_side_with_the_speed_up_and_the_incorrect_row_marked(tmp_path):
    page = render_report([run(tmp_path / "run1", [summary_case(standard_rows())])])
    body = section(page, "operation")
    assert [h for h in re.findall(r"<h4>(.*?)</h4>", body)] == ["mm", "add"]
    mm = body[body.index("<h4>mm</h4>"):body.index("<h4>add</h4>")]
    assert "<th>native median / p99</th>" in mm and "<th>flag_gems speed-up</th>" in mm
    # mm FP32: native 2 ms, flag_gems 2.5 ms: 0.80x; 2*4096^3 FLOPs in 2 ms = 68.72 TFLOP/s, 68.7 % of 100 TFLOP/s
    assert "<td>2.00 ms / 2.40 ms</td><td>68.72 TFLOP/s</td><td>68.7 % (compute)</td>" in mm
    assert "<td>0.80x</td>" in mm and "<td>1.25x</td>" in mm
    # add is memory-bound: its achieved figure is bytes/s
    assert "GB/s</td><td>80.5 % (memory)</td>" in body
    assert body.count('<td class="bad">') == 1
    assert '<td class="bad">INCORRECT (max error 0.5, atol 0.016, rtol 0.016)</td>' in body
    assert '<p class="warn">add BF16 flag_gems: max error 0.5, atol 0.016, rtol 0.016</p>' in body
    assert "Roofs: fp32 100.00 TFLOP/s, bf16 400.00 TFLOP/s; memory 2000.00 GB/s." in body
    (image,) = re.findall(r'<img src="data:image/svg\+xml;base64,([^"]+)" alt="roofline of operators 1x1">', body)
    svg = base64.b64decode(image).decode()
    assert svg.count("<path") > 8, "points and roof lines drawn"
    assert "#ff0000" in svg, "the incorrect row's red cross"
    correct = render_report([run(tmp_path / "run2", [summary_case([r for r in standard_rows() if r["correct"]])])])
    assert "#ff0000" not in base64.b64decode(re.findall(r'base64,([^"]+)" alt="roofline', correct)[0]).decode()


def test_a_vendor_without_peaks_says_which_key_is_missing(tmp_path):
    rows = standard_rows()
    page = render_report([run(tmp_path / "run1", [summary_case(rows)], hardware={"peak_flops": {}})])
    body = section(page, "operation")
    assert "no compute roof: vendor.yaml has no hardware.H100.peak_flops" in body
    assert "no memory roof: vendor.yaml has no hardware.H100.memory_bandwidth_bytes_s" in body
    assert "Roofs:" not in body and body.count("<img") == 1  # the points, without roofs


def test_the_operator_section_renders_in_chromium(tmp_path, chromium, artifacts):
    page = tmp_path / "operation.html"
    page.write_text(render_report([run(tmp_path / "run1", [summary_case(standard_rows())])]))
    browser = Browser(chromium)
    try:
        browser.load(page)
        facts = json.loads(browser.evaluate(SECTION_FACTS))
        assert browser.errors() == []
        assert "operation" in facts["sections"]
        assert facts["images"] and all(w > 0 and h > 0 for w, h, _ in facts["images"])
        assert facts["tables"] == ["mm", "add"] and facts["headers"] == [11, 11]
        assert facts["bad"] == [["INCORRECT (max error 0.5, atol 0.016, rtol 0.016)", RED]]
        assert facts["warn"][0].startswith("Incorrect: 1 of 8 operator row(s)")
        browser.screenshot(artifacts / "report-operation.png")
    finally:
        browser.close()
