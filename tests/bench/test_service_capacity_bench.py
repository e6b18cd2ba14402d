"""bench/service_capacity.py runs (tiny) so it cannot rot: both runs, the bound kept."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_both_runs_come_out_and_the_bounded_one_never_runs_more_workers_than_its_bound():
    args = ["--tuning-jobs", "4", "--cap", "2", "--jobs", "1", "--sleep", "0.1"]
    out = subprocess.run(
        [sys.executable, "bench/service_capacity.py", *args, "--strategy", "Random"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = dict(re.findall(r"^\| (no bound \(reference\)|2) \| (\d+) \|", out.stdout, re.M))
    assert int(rows["2"]) <= 2 and int(rows["no bound (reference)"]) >= 1, out.stdout
    assert "bounded at 2: peak memory" in out.stdout
