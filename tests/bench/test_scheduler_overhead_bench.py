"""bench/scheduler_overhead.py runs (tiny) so it cannot rot: all four runs, every figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_four_runs_and_their_ratios_come_out():
    out = subprocess.run(
        [sys.executable, "bench/scheduler_overhead.py", "--jobs", "12", "--parallel", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stderr == ""  # the wrapper's runs printed no traceback
    labels = (
        "xargs -P 3",
        "xargs + the wrapper",
        "tuner",
        "tuner, GPU leases",
        "ratio tuner / xargs",
    )
    for label in (*labels, "ratio tuner with GPU leases / tuner"):
        assert f"  {label}" in out.stdout
    assert "the wrapper's share" in out.stdout
