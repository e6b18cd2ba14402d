"""The wrapper every local job runs under (tuner/launchers/exit_keeper.py), run as the local
launcher runs it: exit status kept and mirrored, signals passed on, the job's signal
dispositions as if no wrapper stood between."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tuner.launchers.exit_keeper import read_exit_code
from tuner.launchers.local import KEEPER_COMMAND


def keep(tmp_path: Path, *argv: str, **popen: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*KEEPER_COMMAND, str(tmp_path / "exit_code"), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **popen,  # type: ignore[call-overload]
    )


@pytest.mark.parametrize(
    ("script", "code"),
    [("exit 0", 0), ("exit 3", 3), ("kill -9 $$", -signal.SIGKILL), ("kill -15 $$", -15)],
)
def test_the_status_is_kept_and_the_wrapper_ends_as_the_job_did(tmp_path, script, code):
    wrapper = keep(tmp_path, "sh", "-c", script)
    assert wrapper.wait(timeout=30) == code
    assert read_exit_code(tmp_path / "exit_code") == code
    assert not (tmp_path / "exit_code.partial").exists()


def test_a_program_that_cannot_start_is_127_and_named(tmp_path):
    wrapper = keep(tmp_path, "/no/such/trainer", "--lr", "0.1")
    out, _ = wrapper.communicate(timeout=30)
    assert wrapper.returncode == 127 and read_exit_code(tmp_path / "exit_code") == 127
    assert b"cannot start '/no/such/trainer'" in out


def test_sigterm_to_the_wrapper_reaches_the_job_which_may_finish_its_work(tmp_path):
    job = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (print('saving', flush=True), sys.exit(5)))\n"
        "print('up', flush=True)\n"
        "time.sleep(60)\n"
    )
    wrapper = keep(tmp_path, sys.executable, "-c", job)
    assert wrapper.stdout is not None
    assert wrapper.stdout.readline() == b"up\n"
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(timeout=30) == 5
    assert wrapper.stdout.read() == b"saving\n"
    assert read_exit_code(tmp_path / "exit_code") == 5


def test_a_sigterm_while_the_job_starts_is_not_lost(tmp_path):
    """Sent as soon as the wrapper's process exists, before or while it starts the job."""
    for _ in range(5):
        wrapper = keep(tmp_path, "sleep", "60")
        time.sleep(0.01)
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(timeout=30) == -signal.SIGTERM


def test_the_job_starts_with_default_signal_dispositions_and_no_blocked_signals(tmp_path):
    """Python ignores SIGPIPE and SIGXFSZ and the wrapper handles SIGTERM, SIGINT and SIGHUP:
    none of that may leak into the job (a shell pipeline in a training script relies on
    SIGPIPE). Read from the job's /proc status (glibc's posix_spawn leaves its two internal
    signals, 32 and 33, ignored; glibc installs their handlers where it uses them)."""
    wrapper = keep(tmp_path, "cat", "/proc/self/status")
    out, _ = wrapper.communicate(timeout=30)
    assert wrapper.returncode == 0
    masks = {
        key: int(value, 16)
        for key, value in (line.split(":\t") for line in out.decode().splitlines())
        if key in ("SigBlk", "SigIgn", "SigCgt")
    }
    ours = sum(1 << (s - 1) for s in (1, 2, 13, 15, 25))  # HUP INT PIPE TERM XFSZ
    assert masks["SigBlk"] == 0 and masks["SigCgt"] == 0
    assert masks["SigIgn"] & ours == 0, hex(masks["SigIgn"])


def test_the_launch_marker_stays_with_the_wrapper(tmp_path):
    wrapper = keep(
        tmp_path,
        sys.executable,
        "-c",
        "import os; print(os.environ.get('TUNER_LAUNCH_FOLDER'), os.environ['OTHER'])",
        env={"TUNER_LAUNCH_FOLDER": "/x", "OTHER": "kept", "PATH": "/usr/bin:/bin"},
    )
    out, _ = wrapper.communicate(timeout=30)
    assert out == b"None kept\n"
