"""``bench/gpu_check.py --cpu``: the GPU check's every step, tiny, on the CPU, so it cannot rot
between the rare runs on a GPU machine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(3600)
def test_the_gpu_check_runs_every_step_on_the_cpu_and_prints_one_table(tmp_path):
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--cpu", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3500,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert all(row["ok"] for row in rows)
    checks = {(row["check"], row["figure"]) for row in rows}
    for expected in [
        ("(a) throughput", "eager images/s (batch 4)"),
        ("(b) trainer", "precision, memory format"),
        ("(b) trainer", "start-up s"),
        ("(b) trainer", "model.onnx written"),
        ("(b) trainer", "restart resumes after epoch 0"),
        ("(b) trainer", "images/s end to end, epoch 2"),
        ("(c) packing", "2 trial(s) on one GPU, images/s"),
        ("(d) tuner compare", "training jobs completed"),
        ("(d) tuner compare", "median start-up s per trial"),
        ("(e) early stopping", "training jobs Completed or Stopped"),
        ("(e) early stopping", "stopped early at a rung"),
        ("(e) early stopping", "epochs trained / full budget"),
        ("(e) early stopping", "trial processes left"),
    ]:
        assert expected in checks, expected
    table = r"\(d\) tuner compare +training jobs completed +4/4 +ok"  # the table itself
    assert re.search(table, done.stdout), done.stdout[-2000:]


@pytest.mark.timeout(600)
def test_steps_runs_only_the_steps_named_and_keeps_each_row_as_it_comes(tmp_path):
    """``--steps a`` (a short device lease split in two): only step (a)'s rows, each printed the
    moment it is taken and in the JSON file, so a run cut off by a time limit still shows them."""
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--cpu", "--steps", "a", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=550,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    checks = {row["check"] for row in json.loads(out.read_text())}
    assert checks == {"(a) throughput", "total"}
    streamed = done.stdout.split("check_throughput took")[0]
    assert "(a) throughput | eager images/s (batch 4) |" in streamed


def test_a_failing_step_makes_the_check_fail(tmp_path):
    """A figure that cannot be taken is a failure with the reason, not a silent gap."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(ROOT / "bench"))
    report = gpu_check.Report()
    report.add("(a) throughput", "eager images/s", 12.5)
    assert report.ok
    report.missing("(c) packing", "total images/s", "trial 2 exited with code 1")
    assert not report.ok and report.rows[-1].note == "trial 2 exited with code 1"


def test_processes_marked_finds_a_trials_descendants_by_their_environment(tmp_path):
    """Step (e)'s orphan check: a process carrying the run's marker (as a trial's compile
    workers inherit it) is found until it ends; another run's marker is not."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(ROOT / "bench"))
    run = str(tmp_path / "early-stopping")
    env = {"PATH": "/usr/bin:/bin", "GPU_CHECK_RUN": run}
    child = subprocess.Popen(["sleep", "60"], env=env)
    try:
        deadline = time.monotonic() + 10  # until it has exec'd: the forked child's environment
        while b"sleep" not in Path(f"/proc/{child.pid}/cmdline").read_bytes():  # is ours first
            assert time.monotonic() < deadline
            time.sleep(0.01)
        found = gpu_check.processes_marked(run)
        assert [line.split(":")[0] for line in found] == [str(child.pid)]
        assert "sleep 60" in found[0]
        assert gpu_check.processes_marked(run + "-other") == []
    finally:
        child.kill()
        child.wait()
    assert gpu_check.processes_marked(run) == []


def _names(words: str) -> set[str]:
    return {
        re.split(r"[<>=\[ ]", w, maxsplit=1)[0].lower().replace("_", "-") for w in words.split()
    }


def test_the_device_wheels_cover_every_core_dependency():
    """A GPU machine has PyTorch and no package index: every core dependency of pyproject.toml
    must be on its image or among the wheels ``bench/device_wheels.sh`` fetches (google-re2,
    added for the metric regexes, once was neither, so the GPU check would not have imported)."""
    script = (ROOT / "bench" / "device_wheels.sh").read_text()
    lists = dict(re.findall(r'^(on_image|wheels)="([^"]*)"', script, re.M))
    covered = _names(lists["on_image"]) | _names(lists["wheels"])
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    missing = _names(" ".join(d.replace(" ", "") for d in core)) - covered
    assert not missing, f"core dependencies neither on the device image nor fetched: {missing}"
