"""Two processes, one folder: a run or sweep folder is held by an OS lock for the life of its process; a second
process stops in one line naming the holder's PID, exit 1, before any call, and the first's results are intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from semgrad._lock import LOCK_NAME, FolderInUse, hold_folder
from semgrad.experiments import RunConfig

from ._servers import DATA, ROOT, SMALL, env, run_args, semgrad, server, start, wait_for  # noqa: F401


def _holds(folder: Path, pid: int) -> bool:
    """Whether `folder`'s lock file names process `pid`."""
    try:
        return (folder / LOCK_NAME).read_text().strip() == str(pid)
    except OSError:
        return False


def _stalled(server) -> None:  # noqa: F811
    """The server's first request (the first run's preflight) hangs until the test releases it."""
    server.slow_seconds = 120
    server.faults.append("slow")


def _settled(server, pid: int, folder: Path) -> int:  # noqa: F811
    """Once `pid` holds `folder` and its requests stopped arriving (it waits on the stalled one): their count."""
    wait_for(lambda: server.count >= 1 and _holds(folder, pid))
    seen = [-1]

    def still() -> bool:
        before, seen[0] = seen[0], server.count
        time.sleep(0.5)
        return before == seen[0] == server.count

    wait_for(still)
    return server.count


def _finish(process: subprocess.Popen[str], server) -> tuple[str, str]:  # noqa: F811
    """Release the stalled request and wait for `process`; its stdout and stderr (it must exit 0)."""
    server._release.set()
    out, err = process.communicate(timeout=240)
    assert process.returncode == 0, err
    return out, err


def _refused(result: subprocess.CompletedProcess[str], folder: Path, pid: int) -> None:
    """The second process exited 1 with one line on stderr naming the folder and the holder's PID."""
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"semgrad: error: {folder} is in use by process {pid} "), line


def test_a_second_run_into_a_held_folder_stops_before_any_call_and_leaves_the_first_intact(tmp_path, server):  # noqa: F811
    """`semgrad run --seed 1` into the --out of a running `semgrad run --seed 0`: exit 1, one line naming the
    first's PID, no request reaches the provider; the first finishes with its own config and results."""
    out = tmp_path / "run"
    _stalled(server)
    first = start(*run_args(server.url, out, "--seed", "0"))
    try:
        sent = _settled(server, first.pid, out)
        second = semgrad(*run_args(server.url, out, "--seed", "1"))
        _refused(second, out, first.pid)
        assert server.count == sent  # the first's stalled preflight alone: the second sent nothing
        _finish(first, server)
    finally:
        first.kill()
    assert json.loads((out / "config.json").read_text())["seed"] == 0
    (task,) = json.loads((out / "results.json").read_text())["tasks"]
    assert len(task["iterations"]) == 2
    assert not (out / LOCK_NAME).exists()  # released: the next process finds the folder free
    again = semgrad(*run_args(server.url, out, "--seed", "1"))
    assert again.returncode == 1 and "already holds a run" in again.stderr


def _spec(path: Path, url: str) -> Path:
    settings = {
        "data_dir": str(DATA),
        "backend": "openai-compatible",
        "base_url": url,
        "train": 2,
        "test": 2,
        "iterations": 1,
    }
    lines = ['tasks = ["bbh:navigate"]', "seeds = [0, 1]", 'optimizers = ["tgd"]', "[models]", 'model = "m"']
    lines += ["[settings]", *(f"{k} = {json.dumps(v)}" for k, v in settings.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_second_sweep_into_a_held_folder_stops_before_any_call(tmp_path, server):  # noqa: F811
    """Two `semgrad sweep --local` on one --out: the second exits 1 with one line naming the first's PID and
    makes no request (it would pay for every call again); the first finishes every run once."""
    spec, out = _spec(tmp_path / "s.toml", server.url), tmp_path / "sweep"
    _stalled(server)
    first = start("sweep", str(spec), "--local", "--max-parallel", "1", "--out", str(out))
    try:
        sent = _settled(server, first.pid, out)
        second = semgrad("sweep", str(spec), "--local", "--out", str(out))
        _refused(second, out, first.pid)
        assert server.count == sent
        _finish(first, server)
    finally:
        first.kill()
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert [r["error"] for r in runs] == [None, None] and all(r["calls"] for r in runs)
    assert not (out / LOCK_NAME).exists() and not list(out.glob(f"*/{LOCK_NAME}"))
    repeat = semgrad("sweep", str(spec), "--local", "--out", str(out))
    assert repeat.returncode == 0 and repeat.stderr.count("skipped") == 2, repeat.stderr


def _holder(folder: Path) -> subprocess.Popen[str]:
    """Another process holding `folder` until its stdin closes (or it is killed)."""
    code = "import sys\nfrom semgrad._lock import hold_folder\nwith hold_folder(sys.argv[1]):\n"
    code += "    print('held', flush=True)\n    sys.stdin.read()\n"
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_a_sweep_run_whose_folder_another_process_holds_fails_alone_and_calls_nothing(tmp_path):
    """`execute_run` (what a Ray task or a --local thread runs) takes its run folder's lock: held by another
    process, the run fails with one line naming that PID and its LLM is never built or called."""
    from semgrad.sweeps import parse_spec
    from semgrad.sweeps._execute import execute_run

    spec = parse_spec(
        {"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd"], "settings": {"data_dir": str(DATA)}}
    )
    (run,) = spec.runs()
    built: list[str] = []
    holder = _holder(tmp_path / run.name)
    try:
        outcome = execute_run(run, str(tmp_path), instrument=lambda llm, name, where: built.append(name) or llm)
    finally:
        holder.communicate(timeout=30)
    assert outcome["status"] == "failed" and f"is in use by process {holder.pid}" in outcome["error"]
    assert built == [] and not (tmp_path / run.name / "config.json").exists()
    assert execute_run(run, str(tmp_path))["status"] == "started"  # released: the run goes on


def test_a_killed_holder_releases_its_folder(tmp_path):
    """A holder killed by SIGKILL leaves no lock behind (the kernel drops it with the process): the next
    process takes the folder, and its PID replaces the dead one's in the lock file."""
    folder = tmp_path / "run"
    holder = _holder(folder)
    with pytest.raises(FolderInUse, match=f"in use by process {holder.pid} "), hold_folder(folder):
        pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=30)
    assert _holds(folder, holder.pid)  # the file outlives its process; the lock does not
    with hold_folder(folder):
        assert _holds(folder, os.getpid())


def test_run_experiment_refuses_a_folder_another_process_holds(tmp_path):
    """The library's `run_experiment` takes the lock too: FolderInUse before anything is read or written."""
    from semgrad.backends.fake import HashLLM
    from semgrad.experiments import run_experiment

    folder = tmp_path / "run"
    holder = _holder(folder)
    try:
        with pytest.raises(FolderInUse, match=str(holder.pid)):
            run_experiment(RunConfig("bbh:navigate", data_dir=str(DATA)), folder, llm=HashLLM())
    finally:
        holder.communicate(timeout=30)
    assert not folder.exists()  # nothing written: the folder the holder made went with it


def test_the_lock_is_re_entrant_in_one_context_and_refuses_another_thread(tmp_path):
    """Within one context a held folder is taken again at once (the CLI holds it, then `run_experiment`); a
    block in another thread of the same process is refused like another process."""
    folder = tmp_path / "run"
    caught: list[BaseException] = []

    def other() -> None:
        try:
            with hold_folder(folder):
                pass
        except FolderInUse as exc:
            caught.append(exc)

    with hold_folder(folder), hold_folder(folder):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert _holds(folder, os.getpid())
    assert len(caught) == 1 and f"process {os.getpid()}" in str(caught[0])
    with hold_folder(folder):  # released by the outer block alone
        pass


def test_a_folder_the_lock_made_is_removed_when_nothing_was_written(tmp_path):
    """A run refused before it starts leaves nothing: the folders the lock created are removed again when empty;
    a folder with a file in it, or one that existed before, stays."""
    with hold_folder(tmp_path / "a" / "b"):
        assert (tmp_path / "a" / "b" / LOCK_NAME).is_file()
    assert not (tmp_path / "a").exists()
    with hold_folder(tmp_path / "c"):
        (tmp_path / "c" / "results.json").write_text("{}")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["results.json"]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_a_lock_file_that_is_no_regular_file_is_refused_without_following_or_hanging(tmp_path, kind):
    """A symbolic link in the lock file's place is not followed (its target is not written), a FIFO is not
    waited on, a folder is not taken for a lock: each is refused naming the file."""
    folder, target = tmp_path / "run", tmp_path / "victim.txt"
    folder.mkdir()
    target.write_text("keep")
    lock = folder / LOCK_NAME
    if kind == "symlink":
        lock.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    with pytest.raises(OSError, match=LOCK_NAME), hold_folder(folder):
        pass
    assert target.read_text() == "keep"


def test_a_run_without_out_whose_chosen_name_another_process_holds_takes_the_next_name(tmp_path, monkeypatch):
    """Two runs started in the same second without --out, both naming their folder before either made it: the one
    that finds the folder held writes to the next name (``-2``) and succeeds; the held folder gets nothing of it."""
    import time as real_time

    from semgrad.cli import main
    from semgrad.experiments import _run_folder

    frozen = real_time.localtime(1_800_000_000)
    monkeypatch.setattr(_run_folder.time, "localtime", lambda now=None: frozen)
    monkeypatch.chdir(tmp_path)
    taken = Path("runs") / f"bbh-navigate-{real_time.strftime('%Y%m%d-%H%M%S', frozen)}"
    names = iter([taken])  # the first name was chosen before the other process made the folder
    real = _run_folder.new_run_dir
    monkeypatch.setattr(_run_folder, "new_run_dir", lambda config, *a, **k: next(names, None) or real(config, *a, **k))
    with _holder(tmp_path / taken) as holder:
        try:
            code = main(["run", "bbh:navigate", "--data-dir", str(DATA), "--backend", "simulated", "-q", *SMALL[:-2]])
            held = sorted(p.name for p in taken.iterdir())
        finally:
            holder.communicate("")  # stdin closed: the holder lets go and ends
    assert code == 0
    assert held == [LOCK_NAME]  # the holder's lock file alone
    assert (tmp_path / taken.with_name(taken.name + "-2") / "results.json").is_file()
