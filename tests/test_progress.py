"""``fit()`` shows a progress bar as ``tuner run`` does: on a terminal, or when asked."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap

from tests.conftest import fake_command
from tests.test_tuner import tuner_args
from tuner import HyperparameterTuner


def test_fit_shows_progress_when_asked_and_is_quiet_otherwise(tmp_path, capfd):
    HyperparameterTuner(**tuner_args(tmp_path, max_jobs=3, name="shown")).fit(progress=True)
    shown = capfd.readouterr().err
    assert "3/3" in shown and "best accuracy=" in shown

    HyperparameterTuner(**tuner_args(tmp_path, max_jobs=3, name="quiet")).fit()
    assert capfd.readouterr().err == ""  # stderr is not a terminal here
    HyperparameterTuner(**tuner_args(tmp_path, max_jobs=3, name="off")).fit(progress=False)
    assert capfd.readouterr().err == ""


def test_fit_on_a_terminal_shows_progress_by_default(tmp_path):
    script = textwrap.dedent(
        f"""
        from tuner import ContinuousParameter, HyperparameterTuner
        HyperparameterTuner(
            job_definition={{"command": {fake_command()!r}, "output_path": {str(tmp_path)!r}}},
            objective_metric_name="accuracy",
            hyperparameter_ranges={{"x": ContinuousParameter(0.0, 1.0)}},
            metric_definitions=[{{"Name": "accuracy", "Regex": "accuracy=([0-9.]+)"}}],
            strategy="Random", max_jobs=2, storage="sqlite:///{tmp_path / "db.sqlite"}",
        ).fit()
        """
    )
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24x100
    process = subprocess.Popen(
        [sys.executable, "-c", script], stderr=follower, stdout=subprocess.DEVNULL, cwd=tmp_path
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process has ended
            break
        if not chunk:
            break
        seen += chunk
    assert process.wait(timeout=120) == 0, seen
    os.close(leader)
    assert b"2/2" in seen and b"best accuracy=" in seen
