"""A fair share of CPU threads for each trial: the cores divided by the trials that run at once.

Numerical libraries start one thread per core by default (PyTorch's OpenMP pool, MKL,
OpenBLAS), so eight trials on 16 cores run 128 busy threads that slow each other down; on an
H100 machine eight trainers used 48 CPU-minutes in 8.8 minutes that way. The local and Docker
launchers therefore set ``THREAD_VARIABLES`` to the fair share, unless the user set any of them
(in the job definition's ``environment`` or, for local processes, in the tuner's own
environment): then the user's choice stands and none is added.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def local_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def fair_share(cores: float, parallel_jobs: int) -> int:
    """Threads for each of ``parallel_jobs`` trials sharing ``cores``: at least one."""
    return max(1, int(cores // max(1, parallel_jobs)))


def thread_env(cores: float, parallel_jobs: int, *user_envs: Mapping[str, str]) -> dict[str, str]:
    """``THREAD_VARIABLES`` set to the fair share, or nothing when a user env sets any of them."""
    if any(name in env for env in user_envs for name in THREAD_VARIABLES):
        return {}
    share = str(fair_share(cores, parallel_jobs))
    return dict.fromkeys(THREAD_VARIABLES, share)
