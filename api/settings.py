"""The service's configuration, read from the environment (or given by ``tuner serve``)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field

from tuner.env_values import count_from_env
from tuner.errors import ValidationError
from tuner.service import Workers, workers_from_env
from tuner.storage import default_url
from tuner.tuner import lease_seconds

MAX_BODY_BYTES = 1 << 20
# a worker takes 70-230 MB and runs up to max_parallel_jobs training jobs: together these bound
# what clients can start on one machine (16 x 100); an operator sets what the machine takes
MAX_RUNNING_TUNING_JOBS = 16
MAX_PARALLEL_JOBS = 100


TOKEN_VARIABLE = "TUNER_API_TOKEN"


def token_from_env() -> str | None:
    """``TUNER_API_TOKEN``, or None when unset or empty (a token is then generated).

    Raises ``ValidationError`` unless it is visible ASCII without spaces, as an Authorization
    header carries it: HTTP strips a trailing space, so ``'abc '`` was accepted at start-up and
    then matched no request. The message never shows the token."""
    token = os.environ.get(TOKEN_VARIABLE, "")
    if not token:
        return None
    bad = [i for i, c in enumerate(token) if not "!" <= c <= "~"]
    if bad:
        raise ValidationError(
            f"{TOKEN_VARIABLE} must be visible ASCII characters without spaces (as an "
            f"Authorization header carries it), got a value of {len(token)} characters of "
            f"which {len(bad)} not (whitespace or non-ASCII; the first at position {bad[0] + 1})"
        )
    return token


@dataclass(frozen=True)
class Settings:
    """``token``: the bearer token every endpoint but /healthz requires.
    ``allowed_programs``: when set, the only programs a job definition may run;
    ``allowed_images`` / ``allowed_docker_hosts``: the images and Docker engines it may use
    (see ``tuner.launch_policy``: by default no ``docker_host``).
    ``workers``: where tuning jobs run, each in a worker process (default) or a thread of the
    service (``tuner.service``). ``max_running_tuning_jobs``: the most it runs at once, more
    wait; ``max_parallel_jobs``: the most a definition may ask for (more is refused)."""

    token: str
    database_url: str = field(default_factory=default_url)
    runs_dir: str = "tuner-runs"
    lease_seconds: float = 30.0
    scan_interval: float = 1.0
    allowed_programs: tuple[str, ...] = ()
    allowed_images: tuple[str, ...] = ()
    allowed_docker_hosts: tuple[str, ...] = ()
    max_body_bytes: int = MAX_BODY_BYTES
    workers: Workers = "process"
    max_running_tuning_jobs: int = MAX_RUNNING_TUNING_JOBS
    max_parallel_jobs: int = MAX_PARALLEL_JOBS

    @classmethod
    def from_env(cls) -> Settings:
        """TUNER_API_TOKEN (generated when unset), TUNER_DATABASE_URL, TUNER_RUNS_DIR,
        TUNER_LEASE_SECONDS, TUNER_ALLOWED_PROGRAMS (separated by os.pathsep),
        TUNER_ALLOWED_IMAGES and TUNER_ALLOWED_DOCKER_HOSTS (separated by spaces: image tags and
        URLs hold ':'),
        TUNER_WORKERS (``process`` or ``thread``), TUNER_MAX_RUNNING_TUNING_JOBS,
        TUNER_MAX_PARALLEL_JOBS."""
        env = os.environ
        allowed = tuple(p for p in env.get("TUNER_ALLOWED_PROGRAMS", "").split(os.pathsep) if p)
        images = tuple(env.get("TUNER_ALLOWED_IMAGES", "").split())
        hosts = tuple(env.get("TUNER_ALLOWED_DOCKER_HOSTS", "").split())
        return cls(
            token=token_from_env() or secrets.token_urlsafe(24),
            database_url=default_url(),
            runs_dir=env.get("TUNER_RUNS_DIR", "tuner-runs"),
            lease_seconds=lease_seconds(),
            allowed_programs=allowed,
            allowed_images=images,
            allowed_docker_hosts=hosts,
            workers=workers_from_env(),
            max_running_tuning_jobs=count_from_env(
                "TUNER_MAX_RUNNING_TUNING_JOBS", MAX_RUNNING_TUNING_JOBS
            ),
            max_parallel_jobs=count_from_env("TUNER_MAX_PARALLEL_JOBS", MAX_PARALLEL_JOBS),
        )
