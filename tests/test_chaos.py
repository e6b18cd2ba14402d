"""The small version of ``bench/chaos.py``: 8 jobs, the service SIGKILLed 3 times."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import chaos


def test_service_killed_three_times_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    code = chaos.main(["--jobs", "8", "--kills", "3", "--json", str(out)])
    figures = json.loads(out.read_text())
    assert figures["kills_done"] >= 1 and figures["restarts_back"] == figures["kills_done"]
    assert figures["jobs_lost"] == 0
    assert figures["jobs_run_twice"] == 0
    assert figures["differing_status_or_exit_code"] == 0
    assert figures["orphan_processes"] == 0
    assert code == 0
