"""bench/log_followers.py runs (tiny) so it cannot rot: both phases measured and printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_both_phases_are_measured_and_the_followers_cost_is_printed():
    out = subprocess.run(
        [sys.executable, "bench/log_followers.py", "--followers", "3", "--seconds", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert re.search(r"no follower \(reference\)\s+[0-9.]+ CPU s/s", out.stdout), out.stdout
    assert re.search(r"3 idle followers\s+[0-9.]+ CPU s/s", out.stdout), out.stdout
    assert re.search(r"ms of CPU per follower per second", out.stdout), out.stdout
