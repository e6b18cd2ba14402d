"""What a service lets a submitted definition run: programs, images and Docker engines.

A service takes definitions from clients it does not fully trust. ``LaunchPolicy.check`` refuses,
with a ``ValidationError`` naming the field, the rule and the value:
- a program (``argv[0]``) outside ``programs`` when that list is set;
- an ``image`` outside ``images`` when that list is set, and any image when ``programs`` is set
  but ``images`` is not (an operator who restricts programs has allowed no image yet);
- a ``docker_host`` outside ``docker_hosts``: by default (empty list) a client cannot point
  the service at a Docker engine of its choosing; jobs use the service's own engine;
- with ``programs`` set, a job ``environment`` that sets a variable that makes an allowed
  program load or run other code (``HIJACKING_VARIABLES``: the dynamic loader's ``LD_*``,
  ``PATH``, interpreters' start-up hooks and module paths): the allowed program would be a
  door to any code on the machine. Jobs inherit the service's own environment, so an operator
  sets such variables there;
- (``check_definition``) a ``max_parallel_jobs`` above ``max_parallel_jobs`` when set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuner.definition import JobDefinition, TuningJobDefinition
from tuner.errors import ValidationError

# Variables through which a process is made to load or run code other than its own.
HIJACKING_VARIABLES = frozenset(
    {
        "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "PS4",
        "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
        "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
        "PYTHONWARNINGS", "GCONV_PATH", "OPENSSL_CONF", "OPENSSL_ENGINES", "ZDOTDIR",
    }
)  # fmt: skip
# LD_*/DYLD_*: the dynamic loader; BASH_FUNC_*: bash's exported functions, which replace any
# command a bash script runs (no file needed); LUA_INIT*: Lua code run at start-up
HIJACKING_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "LUA_INIT")


@dataclass(frozen=True)
class LaunchPolicy:
    programs: Sequence[str] = ()
    images: Sequence[str] = ()
    docker_hosts: Sequence[str] = ()
    max_parallel_jobs: int | None = None

    def check_definition(self, definition: TuningJobDefinition) -> None:
        """Raise ``ValidationError`` unless this policy allows the tuning job: what its jobs
        run (``check``) and how many of them run at once."""
        self.check(definition.job_definition)
        limit = self.max_parallel_jobs
        if limit is not None and definition.max_parallel_jobs > limit:
            raise ValidationError(
                f"max_parallel_jobs must be at most {limit}, the most training jobs this "
                f"service runs at once for one tuning job (tuner serve --max-parallel-jobs), "
                f"got {definition.max_parallel_jobs}"
            )

    def check(self, job: JobDefinition) -> None:
        """Raise ``ValidationError`` unless this policy allows what ``job`` would run."""
        argv = job.argv_prefix
        if self.programs and argv and argv[0] not in self.programs:
            raise ValidationError(
                f"job_definition.command: the program each job runs must be one of the programs "
                f"this service allows {list(self.programs)}, got {argv[0]!r}"
            )
        if self.programs and job.image is None:
            hijacking = sorted(
                name
                for name in job.environment
                if name in HIJACKING_VARIABLES or name.startswith(HIJACKING_PREFIXES)
            )
            if hijacking:
                raise ValidationError(
                    "job_definition.environment must not set variables that make a program "
                    "load or run other code (the dynamic loader's LD_*, PATH, bash's exported "
                    "functions, interpreters' start-up hooks and module paths) where this "
                    "service allows only some "
                    "programs; set them in the service's own environment, which jobs inherit; "
                    f"got {hijacking}"
                )
        restricted = bool(self.images or self.programs)
        if job.image is not None and restricted and job.image not in self.images:
            raise ValidationError(
                f"job_definition.image must be one of the images this service allows "
                f"{list(self.images)} (tuner serve --allow-image), got {job.image!r}"
            )
        if job.docker_host is not None and job.docker_host not in self.docker_hosts:
            raise ValidationError(
                f"job_definition.docker_host must be one of the Docker engines this service "
                f"allows {list(self.docker_hosts)} (tuner serve --allow-docker-host; default: "
                f"none, jobs use the service's own engine), got {job.docker_host!r}"
            )
