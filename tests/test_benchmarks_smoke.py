"""Smoke test of the benchmark suite (``python -m benchmarks``).

Property: a tiny run of every workload (B = 2, L = 1 ms, one repeat, W6 on 20-
and 40-node DAGs) finishes in a few seconds and writes, where it is told to and
never to ``benchmarks/results/latest.json``, a JSON report of the documented
shape: date, machine, and per workload the figures README.md describes, with
limits computed from the longest chain of dependent calls. It asserts no
performance figure: the benchmark is not part of the unit tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import Settings, format_table, run_suite
from benchmarks._suite import DEFAULT_OUTPUT, main
from benchmarks._wake import precise_sleep
from semgrad.effects import uvloop_available

LATENCY_KEYS = {"wall_s", "limit_s", "wall_over_limit", "calls", "peak_in_flight", "us_per_call"}


def _snapshot(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@pytest.fixture
def latest_untouched():
    before = _snapshot(DEFAULT_OUTPUT)
    yield
    assert _snapshot(DEFAULT_OUTPUT) == before, "the smoke test must not write benchmarks/results/latest.json"


def test_tiny_run_writes_the_documented_report(tmp_path: Path, latest_untouched: None) -> None:
    """A tiny run of every workload writes the documented report, every row naming its loop and wake."""
    out = tmp_path / "report.json"
    report = run_suite(Settings.tiny(), output=out, textgrad=False, echo=lambda line: None)
    saved = json.loads(out.read_text())
    assert saved["workloads"].keys() == report["workloads"].keys()
    assert {"date", "machine", "workloads"} <= saved.keys()
    assert {"platform", "cpu_count", "python"} <= saved["machine"].keys()

    rows = {key: systems["semgrad"] for key, systems in saved["workloads"].items()}
    wakes = Settings.tiny().wakes
    assert wakes == (("fd", "timer") if precise_sleep() is not None else ("timer",))
    other = {f"{key} {wake}" for key in ("W1@0.001", "W4@0.001", "W5-W1@0.001", "W5-W4@0.001") for wake in wakes[1:]}
    assert {"W1@0.001", "W2@0.001", "W3", "W4@0.001", "W5-W1@0.001", "W5-W4@0.001", "W6", "W7"} | other == rows.keys()
    for key in ("W1@0.001", "W2@0.001", "W4@0.001", "W5-W1@0.001", "W5-W4@0.001", "W7"):
        assert "skipped" in rows[key] or rows[key]["wake"] == wakes[0], key
    for key in other:
        assert rows[key]["wake"] == key.split()[1] and rows[key]["calls"] == rows[key.split()[0]]["calls"], key
    for key in ("W1@0.001", "W4@0.001", "W5-W1@0.001", "W5-W4@0.001", "W7"):
        assert LATENCY_KEYS <= rows[key].keys(), key
        assert rows[key]["wall_s"] > 0 and rows[key]["limit_s"] > 0
    # Limits are chains of dependent calls x L: 2 levels on the paper's graph;
    # 2 layers + final forward, then final's and layer 1's backward steps.
    assert rows["W1@0.001"]["chain_calls"] == 2 and rows["W1@0.001"]["limit_s"] == pytest.approx(0.002)
    assert rows["W4@0.001"]["chain_calls"] == 5 and rows["W4@0.001"]["limit_s"] == pytest.approx(0.005)
    assert rows["W1@0.001"]["calls"] == {"forward": 6}
    assert rows["W4@0.001"]["calls"] == {"forward": 10, "backward": 6}
    assert "skipped" in rows["W2@0.001"] or LATENCY_KEYS <= rows["W2@0.001"].keys()
    assert {"us_per_call", "us_per_call_sync", "us_per_call_async"} <= rows["W3"].keys()
    assert all({"seconds", "peak_mb"} <= size.keys() for size in rows["W6"]["sizes"].values())
    assert {"time_ratio", "memory_ratio", "node_ratio"} <= rows["W6"].keys()
    assert rows["W6"]["process"] == "fresh"  # timed in its own interpreter (benchmarks/_fresh.py)
    assert "throughput_over_bound" in rows["W7"]
    for name in ("anyio_floor", "anyio_floor_parked"):
        floor = saved["workloads"]["W1@0.001"][name]
        assert {"wall_s", "limit_s", "wall_over_limit", "walls_s"} <= floor.keys() and floor["wall_over_limit"] > 0
    table = format_table(saved)
    assert "W1@0.001" in table and "anyio floor" in table and "anyio parked" in table
    # Every latency workload's systems run on each event loop of the settings (uvloop where installed).
    loops = Settings.tiny().loops
    assert loops == (("asyncio", "uvloop") if uvloop_available() else ("asyncio",))
    for key in ("W1@0.001", "W4@0.001", "W5-W1@0.001", "W5-W4@0.001"):
        for loop in loops:
            suffix = "" if loop == "asyncio" else f"_{loop}"
            for name in ("semgrad", "anyio_floor", "anyio_floor_parked"):
                row = saved["workloads"][key][name + suffix]
                assert row["loop"] == loop and row["wall_over_limit"] > 0, (key, name, loop)
                assert row["wake"] == wakes[0], (key, name, loop)
    if "uvloop" in loops:
        assert "semgrad uvloop" in table and "anyio parked uvloop" in table


def test_cli_selects_workloads_and_writes_where_told(
    tmp_path: Path, latest_untouched: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI runs only the workloads and wakes asked for, writes where told, and refuses unknown ones."""
    out = tmp_path / "cli.json"
    tiny = Settings.tiny()
    monkeypatch.setattr(Settings, "quick", classmethod(lambda cls: tiny))
    assert main(["--quick", "--only", "W1,W7", "--no-textgrad", "--output", str(out)]) == 0
    assert set(json.loads(out.read_text())["workloads"]) == {"W1@0.001", "W7"} | {
        f"W1@0.001 {wake}" for wake in tiny.wakes[1:]
    }
    assert "W7" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--only", "W9", "--output", "-"])
    assert main(["--quick", "--only", "W1", "--wakes", "timer", "--no-textgrad", "--output", str(out)]) == 0
    saved = json.loads(out.read_text())["workloads"]
    assert set(saved) == {"W1@0.001"} and saved["W1@0.001"]["semgrad"]["wake"] == "timer"
    with pytest.raises(SystemExit):
        main(["--wakes", "spin", "--output", "-"])


def test_the_textgrad_comparison_lists_textgrads_figures_over_semgrads() -> None:
    """The comparison block states TextGrad's wall time and CPU per call over semgrad's, and is empty without them."""
    from benchmarks._suite import format_comparison

    report = {
        "workloads": {
            "W1@0.02": {"semgrad": {}, "textgrad": {"vs_semgrad": 41.2}, "textgrad_threads": {"vs_semgrad": 1.5}},
            "W2@0.02": {"semgrad": {}, "textgrad": {"vs_semgrad": 46.0}},
            "W3": {"semgrad": {}, "textgrad": {"vs_semgrad": 4.0}},
            "W7": {"semgrad": {}},
        }
    }
    text = format_comparison(report)
    assert "W1@0.02    wall time x41.2 sequential, x1.5 with a thread per sample" in text
    assert "W2@0.02    wall time x46 sequential" in text and "W3         CPU per call x4" in text
    assert "W7" not in text
    assert format_comparison({"workloads": {"W1@0.02": {"semgrad": {}}}}) == ""
