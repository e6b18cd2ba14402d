"""Each trial's fair share of CPU threads, as the job itself sees it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tuner.launchers import LaunchSpec, LocalLauncher
from tuner.launchers.threads import THREAD_VARIABLES, fair_share, local_cores, thread_env

PRINT_THREADS = f"import os; print([os.environ.get(v) for v in {THREAD_VARIABLES!r}])"


def run_local(tmp_path: Path, launcher: LocalLauncher, env: dict[str, str] | None = None) -> str:
    spec = LaunchSpec("t", [sys.executable, "-c", PRINT_THREADS], tmp_path / "t", env=env or {})
    handle = launcher.start(spec)
    deadline = time.monotonic() + 30
    while launcher.poll(handle).running:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return launcher.read_logs(handle).decode().strip()


@pytest.mark.parametrize(
    ("cores", "parallel", "share"), [(16, 8, 2), (16, 3, 5), (2, 4, 1), (0.5, 1, 1), (8, 0, 8)]
)
def test_the_fair_share_is_the_cores_divided_by_the_trials_at_once(cores, parallel, share):
    assert fair_share(cores, parallel) == share


def test_a_user_setting_any_thread_variable_keeps_them_all_unset():
    assert thread_env(16, 8) == dict.fromkeys(THREAD_VARIABLES, "2")
    assert thread_env(16, 8, {}, {"MKL_NUM_THREADS": "4"}) == {}


def test_local_jobs_see_their_share(tmp_path, monkeypatch):
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    parallel = 2
    share = str(max(1, local_cores() // parallel))
    printed = run_local(tmp_path, LocalLauncher(parallel_jobs=parallel))
    assert printed == str([share] * len(THREAD_VARIABLES))


def test_the_users_own_setting_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert run_local(tmp_path / "a", LocalLauncher(parallel_jobs=8)) == "['7', None, None]"
    monkeypatch.delenv("OMP_NUM_THREADS")
    printed = run_local(tmp_path / "b", LocalLauncher(parallel_jobs=8), {"OMP_NUM_THREADS": "3"})
    assert printed == "['3', None, None]"
