"""The HTML run report: its sections, figures, diffs, escaping, and the run-directory shell."""

from __future__ import annotations

import copy
import html
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.report import PUBLISHED, REPORT_NAME, _io, render_report, write_report
from semgrad.report._diff import diff_html
from semgrad.report._graph import longest_path_layers

from .conftest import HOSTILE, hostile_version, make_results, parse

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def assert_safe(document: str) -> None:
    """No script, no event handler, no javascript: URL, no external resource, and balanced tags."""
    page = parse(document)
    names = [tag for tag, _ in page.tags]
    assert "script" not in names and "iframe" not in names and "img" not in names and "link" not in names
    for tag, attributes in page.tags:
        assert not [a for a in attributes if a.startswith("on")], (tag, attributes)
        for name in ("href", "src", "xlink:href", "action", "formaction"):
            value = (attributes.get(name) or "").strip().lower()
            assert not value.startswith("javascript:"), (tag, attributes)
            assert name != "href" or not value or value.startswith("#"), (tag, attributes)
        if "style" in attributes:
            pytest.fail(f"{tag} has a style attribute")
    assert page.mismatched == [] and page.stack == [], (page.mismatched, page.stack)
    assert len(page.ids()) == len(set(page.ids())), "element ids are unique"


# --- sections and figures ----------------------------------------------------------------


def test_page_has_every_section(results):
    """The report has the header, summary, chart, graph, per-task table and one section per task."""
    page = parse(render_report(results))
    ids = page.ids()
    for wanted in (
        "simulated-notice",
        "summary",
        "score-chart",
        "graph-picture",
        "per-task",
        "task-0",
        "task-1",
        "score-chart-0",
        "score-chart-1",
        "task-0-param-0",
        "task-1-iteration-3",
    ):
        assert wanted in ids, wanted
    assert len(ids) == len(set(ids)), "ids are unique"
    assert [tag for tag, a in page.tags if tag == "svg"] and ids.index("score-chart") < ids.index("graph-picture")


@pytest.mark.parametrize("tasks", [0, 1, 2])
def test_every_in_page_link_has_a_target(results, tasks):
    """Each href="#x" of the page (navigation, per-task table) points at an element that exists."""
    results["tasks"] = results["tasks"][:1] * tasks
    page = parse(render_report(results))
    targets = [a["href"][1:] for tag, a in page.tags if tag == "a" and a.get("href")]
    assert targets and set(targets) <= set(page.ids())


def test_page_is_self_contained_and_script_free(results):
    """No script, no external resource, no link but in-page anchors, and a strict CSP meta tag."""
    document = render_report(results, {"task": "bbh:all", "iterations": 3})
    assert document.startswith("<!DOCTYPE html>")
    assert_safe(document)
    metas = [a for tag, a in parse(document).tags if tag == "meta" and a.get("http-equiv")]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": CSP}]
    assert not re.search(r"(?i)\b(?:src|href)\s*=\s*\"(?:https?:)?//", document)
    assert "@import" not in document and "url(http" not in document


def test_summary_shows_accuracies_calls_tokens_and_cost(gsm8k_results):
    """A single task's summary shows its accuracies as percentages, calls, tokens and cost."""
    document = render_report(gsm8k_results)
    summary = document[document.index('id="summary"') : document.index("</table>")]
    for expected in (
        "50.0 %",
        "60.0 %",
        "90.0 %",
        "45.0 %",
        "+45.0 pp",
        "40.0 % \u2192 60.0 %",
        "forward: 500",
        "rewrite: 12",
        "(total 520)",
        "optimizer: 12",
        "12,345 in",
        "678 out",
        "$0.12",
    ):
        assert expected in summary, expected


def test_gsm8k_is_shown_beside_the_paper_and_textgrad(gsm8k_results):
    """GSM8K's test accuracy sits beside the paper's 93.2 % and TextGrad's 78.2 %."""
    summary = render_report(gsm8k_results).split('id="summary"')[1].split("</table>")[0]
    assert "Paper (GSM8K): 93.2 %" in summary and "TextGrad (GSM8K): 78.2 %" in summary


def test_bbh_averages_are_shown_beside_the_published_ones(results):
    """A BBH run's NLP and algorithmic averages say how many tasks they cover; over part of a category they are
    marked not comparable and have no published figure beside them, and no task row has one."""
    results["average_tasks"] = {"nlp": {"tasks": 1, "of": 12}, "algorithmic": {"tasks": 1, "of": 15}}
    document = render_report(results)
    summary = document.split('id="summary"')[1].split("</table>")[0]
    assert "BBH NLP average (test, item-weighted) over 1 of 12 tasks" in summary and "70.0 %" in summary
    assert "BBH algorithmic average (test, item-weighted) over 1 of 15 tasks" in summary and "55.0 %" in summary
    assert summary.count("not comparable") == 2 and "82.5 %" not in document and "85.6 %" not in document
    per_task = document.split('id="per-task"')[1].split("</table>")[0]
    assert per_task.count('<a href="#task-') == 2 and "62.5 %" in per_task
    results["average_tasks"] = {"nlp": {"tasks": 12, "of": 12}, "algorithmic": {"tasks": 15, "of": 15}}
    document = render_report(results)
    assert document.count("82.5 %") == 1 and document.count("85.6 %") == 1  # beside the averages only
    assert PUBLISHED == {"gsm8k": 0.932, "bbh_nlp": 0.825, "bbh_algorithmic": 0.856, "textgrad_gsm8k": 0.782}


def test_simulated_notice_only_for_simulated_runs(results, gsm8k_results):
    """A simulated run says so prominently; a real one does not."""
    assert "simulated-notice" in parse(render_report(results)).ids()
    assert "simulated-notice" not in parse(render_report(gsm8k_results)).ids()


def test_parameters_show_initial_final_and_a_diff(gsm8k_results):
    """A changed parameter shows both texts and the diff with <del>/<ins>; an unchanged one says so."""
    document = render_report(gsm8k_results)
    assert '<pre class="diff">Solve the problem<ins> step by step, version 3</ins>.</pre>' in document
    assert document.count('class="tag changed"') == 1 and document.count('class="tag unchanged"') == 1
    assert diff_html("keep old text", "keep new text") == "keep <del>old</del><ins>new</ins> text"


def _diff_sides(diff: str) -> tuple[str, str]:
    """The old and new texts a diff's HTML holds (its note, if any, left out)."""
    diff = re.sub(r'<span class="diff-note">.*?</span>\n', "", diff, flags=re.DOTALL)
    old = re.sub(r"<ins>.*?</ins>", "", diff, flags=re.DOTALL).replace("<del>", "").replace("</del>", "")
    new = re.sub(r"<del>.*?</del>", "", diff, flags=re.DOTALL).replace("<ins>", "").replace("</ins>", "")
    return html.unescape(old), html.unescape(new)


def test_long_repetitive_parameters_are_reported_in_seconds(tmp_path: Path):
    """Parameters of 50,000 equal lines are reported in seconds: their changed middle is shown whole, after a note
    saying the texts were too long to compare in detail (a line diff of them took minutes)."""
    initial, final = "a\n" * 50_000, "b\n" + "a\n" * 49_999 + "c\n"
    task = {"task": "x", "params": {"initial": {"p": initial}, "final": {"p": final}}}
    (tmp_path / "results.json").write_text(json.dumps({"task": "x", "tasks": [task]}), "utf-8")
    started = time.monotonic()
    document = write_report(tmp_path).read_text("utf-8")
    assert time.monotonic() - started < 10
    (diff,) = re.findall(r'<pre class="diff">(.*?)</pre>', document, re.DOTALL)
    assert diff.startswith('<span class="diff-note">(Too long to compare in detail')
    assert _diff_sides(diff) == (initial, final)


def test_a_small_change_in_a_long_text_is_marked_word_by_word():
    """A one-word change in an 80 KB single-line text is marked as that word, not as the whole line."""
    text = " ".join(f"w{i}" for i in range(12_000))
    diff = diff_html(text, text.replace(" w6000 ", " changed "))
    assert diff.count("<del>") == 1 and "<del>w6000</del><ins>changed</ins>" in diff and "diff-note" not in diff


@given(st.text("ab \n<", max_size=60), st.text("ab \n<", max_size=60), st.sampled_from([0, 5, 50, 10**6]))
def test_a_diff_holds_both_texts_whatever_its_work_limit(old, new, limit):
    """However little work a diff may do (words, lines, or the changed middle whole), it holds both texts exactly."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("semgrad.report._diff._MAX_WORK", limit)
        assert _diff_sides(diff_html(old, new)) == (old, new)


def test_accepted_updates_show_the_gradients_and_stage_report(gsm8k_results):
    """Each accepted update shows the gradient that drove it and its stage report; rejected ones are folded away."""
    document = render_report(gsm8k_results)
    shown, folded = document.split("<details><summary>Proposals not applied (1)</summary>")
    assert "Gradient 1: the answer ignored hint_2" in shown and "Gradient 3:" in shown
    assert "Gradient 2:" not in shown and "Gradient 2:" in folded
    assert "<strong>select_error_samples</strong><ul><li>1 wrong</li><li>selected: 3, 7</li></ul>" in shown


def test_chart_draws_a_line_and_a_marker_per_score(gsm8k_results):
    """The chart has a train and a validation line, a marker per score, and a verdict per validation marker."""
    chart = render_report(gsm8k_results).split('<svg id="score-chart"')[1].split("</svg>")[0]
    assert chart.count("<polyline") == 2
    assert chart.count('<rect class="train-point"') == 3
    assert chart.count('<circle class="val-accepted"') == 2 + 1 and chart.count('<circle class="val-rejected"') == 1 + 1
    assert 'class="initial"' in chart and "iteration 2: validation 55.0 % (rejected)" in chart


def _with_protocol(results: dict[str, Any], protocol: str | None) -> dict[str, Any]:
    changed = copy.deepcopy(results)
    for task in changed["tasks"]:
        del task["protocol"]
        if protocol is not None:
            task["protocol"] = protocol
        if protocol == "official":  # no validation set: the gate scores candidates on the training items
            task["sizes"]["validation"], task["accuracy"]["validation"] = 0, None
    return changed


def _gate_texts(document: str) -> tuple[str, str]:
    """The page's text, and the text of every score chart."""
    charts = "".join(part.split("</svg>")[0] for part in document.split('<svg id="score-chart')[1:])
    return parse(document).all_text(), charts


@pytest.mark.parametrize("fixture", ["gsm8k_results", "results"])
def test_the_gate_score_is_named_for_what_it_scored(fixture, request):
    """The gate's score is "validation" only under the heldout protocol; under the official one it is the gate score
    on the training items (summary, chart, iterations table, task facts), and without a protocol a plain gate score."""
    results = request.getfixturevalue(fixture)
    text, charts = _gate_texts(render_report(_with_protocol(results, "official")))
    assert "gate score on the training items: 40.0 % initially" in text
    assert "Gate score (training items)" in text and "the official protocol has no validation set" in text
    assert "iteration 2: gate score 55.0 % (rejected)" in charts and "initial gate score" in charts
    assert "validation" not in charts.lower() and "Validation score" not in text and "validation score" not in text
    if fixture == "gsm8k_results":
        assert "Gate score on the training items (initial \u2192 best)" in text
    text, charts = _gate_texts(render_report(results))
    assert "Gate score" not in text and "gate score" not in charts
    assert "validation score: 40.0 % initially" in text and "iteration 2: validation 55.0 % (rejected)" in charts
    text, charts = _gate_texts(render_report(_with_protocol(results, None)))
    assert "validation" not in charts.lower() and "gate score: 40.0 % initially" in text


def test_graph_picture_has_a_box_per_node_and_an_arrow_per_edge(gsm8k_results):
    """The graph picture draws the four nodes of the paper graph in three layers and its five edges."""
    picture = render_report(gsm8k_results).split('<svg id="graph-picture"')[1].split("</svg>")[0]
    assert picture.count('<g class="node" ') == 4 and picture.count('class="edge"') == 5
    assert picture.count('class="output-ring"') == 1
    tops = sorted({float(y) for y in re.findall(r'<rect class="node-\w+" x="[\d.]+" y="([\d.]+)" width="168', picture)})
    assert len(tops) == 3
    assert "digraph" in render_report(gsm8k_results).split('id="graph-section"')[1]


def test_longest_path_layers_put_every_edge_downwards():
    """Every edge goes from a lower layer to a higher one; nodes on a cycle land in an extra layer."""
    edges = [("a", "b"), ("b", "c"), ("a", "c"), ("d", "c")]
    layers = longest_path_layers(["a", "b", "c", "d"], edges)
    assert layers == {"a": 0, "b": 1, "c": 2, "d": 0}
    assert longest_path_layers(["x", "y"], [("x", "y"), ("y", "x"), ("y", "y")]) == {"x": 0, "y": 0}


def test_render_is_deterministic(results):
    """Rendering the same results twice gives the same page."""
    assert render_report(results) == render_report(json.loads(json.dumps(results)))


# --- hostile text --------------------------------------------------------------------------


def test_hostile_strings_render_as_text_and_keep_the_structure(hostile_results):
    """Script, tag-closing, attribute-breaking and javascript: strings appear as text, never as markup."""
    document = render_report(hostile_results, {"note": " ".join(HOSTILE)})
    assert_safe(document)
    page = parse(document)
    text = page.all_text()
    assert text.count(" ".join(HOSTILE)) >= 10
    for hostile in HOSTILE:
        assert hostile in text
    main = ("html", "body", "main")
    for wanted in (
        "summary-section",
        "chart-section",
        "graph-section",
        "per-task-section",
        "task-0",
        "task-1",
        "config-section",
    ):
        assert page.element(wanted) == ("section", main), wanted
    assert page.element("score-chart")[0] == page.element("graph-picture")[0] == "svg"
    assert page.tags[-1][0] == "footer" and page.parents[-1] == main, "nothing broke out of its element"


@given(st.text(max_size=30))
def test_any_text_anywhere_is_shown_as_text(text):
    """Whatever text a run holds, the page stays well formed and script free and shows it verbatim."""
    results = hostile_version(make_results([_single_task()], task="x"), text)
    page = parse(render_report(results))
    assert page.mismatched == [] and page.stack == []
    assert "script" not in [tag for tag, _ in page.tags]
    shown = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "\ufffd", text)
    assert page.all_text().count(shown) >= 10


def _single_task() -> dict[str, Any]:
    graph = {
        "nodes": [{"name": "question", "kind": "input"}, {"name": "answer", "kind": "llm"}],
        "edges": [["question", "answer"]],
        "output": "answer",
        "dot": "",
        "mermaid": "",
    }
    iteration = {
        "iteration": 1,
        "train_score": 0.5,
        "updates": {"answer.instruction": "b"},
        "gradients": {"answer.instruction": "g"},
        "report": [],
        "calls": {},
        "accepted": True,
    }
    return {
        "task": "x",
        "iterations": [iteration],
        "graph": graph,
        "params": {"initial": {"answer.instruction": "a"}, "final": {"answer.instruction": "b"}},
    }


def test_malformed_optional_fields_render_as_dashes():
    """Numbers of the wrong type, missing objects and odd arrays leave dashes, not a crash."""
    task = {
        "task": "gsm8k",
        "accuracy": {"test": "0.9", "train": True, "validation": float("inf")},
        "iterations": [
            {"iteration": "one", "train_score": None},
            "junk",
            {"report": ["stage", {"stage": "s"}]},
            {"iteration": 1, "accepted": True},
            {"iteration": 1, "accepted": True},
        ],
        "params": {"initial": {"p": {"nested": [1]}}, "final": "x"},
        "graph": {"nodes": "x", "edges": [[1]]},
        "sizes": [],
        "published": {"value": "high"},
    }
    document = render_report({"tasks": [task], "calls": [], "tokens": None, "cost_usd": "free", "averages": 3})
    assert_safe(document)
    assert "\u2014" in document and "not known" in document and "no graph recorded" in document


# --- errors and the run directory ------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([], "results must be a JSON object, got an array"),
        ({}, 'results "tasks" must be an array of objects, got null'),
        ({"tasks": {"a": 1}}, 'results "tasks" must be an array of objects, got an object'),
        ({"tasks": ["gsm8k"]}, "entry 0 is a string"),
    ],
)
def test_render_rejects_results_of_the_wrong_shape(results, message):
    """Results that are not an object with an array of task objects give a one-line ValueError."""
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        render_report(results)
    assert "\n" not in str(error.value)


def test_write_report_writes_report_html_atomically(tmp_path: Path, results):
    """write_report writes the rendered page to DIR/report.html and leaves no temporary file behind."""
    config = {"task": "bbh:all", "seed": 0}
    (tmp_path / "results.json").write_text(json.dumps(results), "utf-8")
    (tmp_path / "config.json").write_text(json.dumps(config), "utf-8")
    (tmp_path / REPORT_NAME).write_text("old", "utf-8")
    path = write_report(tmp_path)
    assert path == tmp_path / "report.html"
    assert path.read_text("utf-8") == render_report(results, config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "report.html", "results.json"]


def test_write_report_survives_lone_surrogates(tmp_path: Path, results):
    """A JSON escape for a lone surrogate in results.json still gives a valid UTF-8 report."""
    text = json.dumps(results).replace("Solve the problem.", "Solve \\ud800 the problem.")
    (tmp_path / "results.json").write_text(text, "utf-8")
    assert "Solve \ufffd the problem." in write_report(tmp_path).read_bytes().decode("utf-8")


def _one_line_error(error: pytest.ExceptionInfo[BaseException], *needles: str) -> None:
    message = str(error.value)
    assert "\n" not in message and all(needle in message for needle in needles), message


@pytest.mark.parametrize("missing_dir", [False, True])
def test_write_report_without_results_json_raises_file_not_found(tmp_path: Path, missing_dir: bool):
    """A run directory without results.json (or no directory at all) gives a one-line FileNotFoundError."""
    run = tmp_path / "nowhere" if missing_dir else tmp_path
    with pytest.raises(FileNotFoundError) as error:
        write_report(run)
    _one_line_error(error, str(run), "no such directory" if missing_dir else "no results.json", "semgrad run")
    assert not (tmp_path / REPORT_NAME).exists()


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("results.json", '{"tasks": [', "not valid JSON"),
        ("results.json", "[1, 2]", "must be a JSON object"),
        ("results.json", '{"tasks": 3}', '"tasks" must be an array'),
        ("results.json", b"\xff\xfe{}", "not UTF-8"),
        ("config.json", "{oops", "not valid JSON"),
        ("config.json", '"text"', "must be a JSON object"),
    ],
)
def test_write_report_with_malformed_json_raises_value_error(tmp_path: Path, results, name, content, needle):
    """A malformed results.json or config.json gives a one-line ValueError naming the file; nothing is written."""
    (tmp_path / "results.json").write_text(json.dumps(results), "utf-8")
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError) as error:
        write_report(tmp_path)
    _one_line_error(error, str(path), needle)
    assert not (tmp_path / REPORT_NAME).exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["results.json", "config.json"])
def test_write_report_refuses_a_fifo_or_an_oversized_file_in_a_run_folder(tmp_path: Path, results, name, monkeypatch):
    """A FIFO in place of results.json or config.json is a one-line ValueError at once (no hang, never "no such
    file" or left out), and so is a file over the size limit; nothing is written."""
    (tmp_path / "results.json").write_text(json.dumps(results), "utf-8")
    path = tmp_path / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    with pytest.raises(ValueError) as error:
        write_report(tmp_path)
    _one_line_error(error, str(path), "not a regular file")
    path.unlink()
    (tmp_path / "results.json").write_text(json.dumps(results), "utf-8")
    path.write_text(json.dumps(results if name == "results.json" else {"task": "x"}), "utf-8")
    monkeypatch.setattr(_io, "MAX_BYTES", 10)
    with pytest.raises(ValueError) as error:
        write_report(tmp_path)
    _one_line_error(error, "larger than 10 bytes")
    assert not (tmp_path / REPORT_NAME).exists()
