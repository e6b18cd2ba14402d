"""What every trial of a tuning job finds in its environment beyond the job contract: the
tuning job's shared folder with PyTorch's compile cache in it, and its share of CPU threads."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_scheduler import make_tuner
from tuner.launchers.threads import THREAD_VARIABLES, local_cores


def trial_envs(tuner) -> list[dict[str, str | None]]:
    return [
        json.loads((Path(j.workdir) / "output" / "env.json").read_text())
        for j in tuner.training_jobs()
    ]


def test_trials_share_one_compile_cache_and_split_the_cores(tmp_path, sqlite_url, monkeypatch):
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    tuner = make_tuner(tmp_path, sqlite_url, max_jobs=3, max_parallel_jobs=3, name="shared")
    tuner.fit()
    shared = (tmp_path / "runs" / "shared" / "shared").resolve()
    envs = trial_envs(tuner)
    assert len(envs) == 3
    for env in envs:
        assert env["TUNER_SHARED_DIR"] == str(shared)
        assert env["TORCHINDUCTOR_CACHE_DIR"] == str(shared / "torch-compile-cache")
        assert env["OMP_NUM_THREADS"] == str(max(1, local_cores() // 3))
    assert shared.is_dir()  # README promises the folder; only the Docker launcher made it


def test_the_definitions_environment_wins(tmp_path, sqlite_url):
    job = {"environment": {"TORCHINDUCTOR_CACHE_DIR": "/cache/mine", "OMP_NUM_THREADS": "5"}}
    tuner = make_tuner(tmp_path, sqlite_url, max_jobs=1, job=job)
    tuner.fit()
    (env,) = trial_envs(tuner)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "/cache/mine" and env["OMP_NUM_THREADS"] == "5"
