"""The folder the trials of one tuning job share, and the caches that live there.

Each tuning job has ``<output_path>/<tuning job>/shared/``; every trial sees it as
``TUNER_SHARED_DIR``, and PyTorch's compiler caches (Inductor's FX-graph and AOTAutograd
caches, Triton's kernels) are pointed there through ``TORCHINDUCTOR_CACHE_DIR``, so the first
trial that compiles a model pays for it and the later ones start from its cache, on one machine,
in containers (the Docker launcher mounts the folder at the same path) or on a cluster's shared
file system. A value the job definition's ``environment`` sets wins.
"""

from __future__ import annotations

from pathlib import Path

SHARED_FOLDER = "shared"


def shared_cache_env(shared_dir: Path) -> dict[str, str]:
    """The environment that points a trial at its tuning job's shared folder and caches."""
    return {
        "TUNER_SHARED_DIR": str(shared_dir),
        "TORCHINDUCTOR_CACHE_DIR": str(shared_dir / "torch-compile-cache"),
    }
