"""In headless Chromium, no edge of the graph picture crosses a box it does not connect, and each prediction
shows every node's output."""

from __future__ import annotations

import json
import re

import pytest

from semgrad.report import write_report

from .conftest import make_results, make_task
from .test_graph_edges import SHORTCUT
from .test_report_browser import find_chromium, run_chromium

pytestmark = pytest.mark.slow

#: Run in a copy of the report only (the report itself runs no script): samples every edge with
#: getPointAtLength and reports each sample strictly inside the box (getBBox) of a node the edge does not
#: connect, and which node outputs the first prediction shows.
PROBE = """<script>
const found = {edges: 0, samples: 0, crossings: [], shown: []};
for (const svg of document.querySelectorAll("svg.graph")) {
  const boxes = [...svg.querySelectorAll("g.node")].map(g => {
    const shape = [...g.children].find(e => (e.tagName === "rect" || e.tagName === "polygon")
                                           && !e.classList.contains("output-ring"));
    return [g.dataset.node, shape.getBBox()];
  });
  for (const edge of svg.querySelectorAll("path.edge")) {
    found.edges += 1;
    const length = edge.getTotalLength();
    for (let at = 0; at <= length; at += 0.5) {
      const p = edge.getPointAtLength(at);
      found.samples += 1;
      for (const [name, b] of boxes) {
        if (name === edge.dataset.source || name === edge.dataset.target) continue;
        if (p.x > b.x + 0.5 && p.x < b.x + b.width - 0.5 && p.y > b.y + 0.5 && p.y < b.y + b.height - 0.5)
          found.crossings.push([edge.dataset.source, edge.dataset.target, name, p.x, p.y]);
      }
    }
  }
}
const row = document.querySelector("table.predictions tbody tr");
for (const part of row.querySelectorAll(".node-output"))
  if (part.getBoundingClientRect().height > 0) found.shown.push([part.dataset.node, part.innerText]);
const out = document.createElement("pre");
out.id = "probe";
out.textContent = JSON.stringify(found);
document.body.append(out);
</script>"""


def test_no_edge_crosses_a_box_in_the_browser_and_every_node_output_is_shown(tmp_path):
    """The review/extract/judge/answer report with a review -> judge shortcut: sampled along its length in the
    browser, no edge enters the box of a node it does not connect; the first prediction shows each node's output."""
    browser = find_chromium()
    run = tmp_path / "run"
    run.mkdir()
    task = make_task("mine", None, 0.5)
    task["graph"] = SHORTCUT
    task["predictions"][0]["nodes"] = {"extract": "the claim", "judge": "supported"}
    (run / "results.json").write_text(json.dumps(make_results([task], task="mine")), "utf-8")
    page = write_report(run).read_text("utf-8")
    probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace("</body>", PROBE + "</body>")
    assert probe.count("<script>") == 1
    (tmp_path / "probe.html").write_text(probe, "utf-8")
    dom = run_chromium(browser, tmp_path, "--dump-dom", (tmp_path / "probe.html").as_uri())
    found = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL).group(1).replace("&quot;", '"'))
    assert found["edges"] == 4 and found["samples"] > 400
    assert found["crossings"] == []
    assert found["shown"] == [["extract", "extract\nthe claim"], ["judge", "judge\nsupported"], ["answer", "answer\n7"]]
