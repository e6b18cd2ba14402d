"""README's Python snippet runs as written, from the clone's root, as a user pastes it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def python_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    [snippet] = [b for b in blocks if "HyperparameterTuner(" in b and ".fit()" in b]
    return snippet


def test_readme_python_snippet_runs_as_written(tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the clone's files, a fresh store
    env = {**os.environ, "TUNER_DATABASE_URL": f"sqlite:///{tmp_path / 'tuner.db'}"}
    result = subprocess.run(
        [sys.executable, "-c", python_snippet()],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'status': 'Completed'" in result.stdout
    assert "TrainingJob(name=" in result.stdout  # the best training job
    assert (tmp_path / "jobs.csv").read_text().count("\n") == 13  # a header and 12 jobs
