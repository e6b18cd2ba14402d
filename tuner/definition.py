"""The tuning-job definition: one validated document behind YAML, the Python API and REST.

``TuningJobDefinition.parse(data)`` checks shapes with pydantic and meaning with the ranges,
metric definitions and strategies themselves; every problem is raised as one
``ValidationError`` whose lines name the field, the rule and the offending value. Nothing is
created or launched before a definition has passed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import pydantic
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from tuner import yaml_text
from tuner.artifacts import split_s3_uri
from tuner.choices import canonical
from tuner.errors import ValidationError
from tuner.metrics import (
    MetricDefinition,
    ObjectiveAggregation,
    check_metric_name,
    validate_metric_definitions,
)
from tuner.names import TUNING_JOB_NAME as NAME_PATTERN
from tuner.parameters import parameter_from_dict, plain
from tuner.space import SearchSpace
from tuner.stopping import HyperbandRungs, MedianStoppingRule
from tuner.stopping.hyperband import SAMPLERS as HYPERBAND_SAMPLERS
from tuner.strategies import make_strategy, strategy_class, strategy_name
from tuner.strategies.grid import GridStrategy
from tuner.tracking import check_tracking_uri
from tuner.warm_start import WarmStartConfig

StaticValue = Annotated[str | int | float | bool, Field(union_mode="smart")]


MAX_JOBS = 100_000
# Errors of limits and rules that a stored definition may break, as a newer version tightened
# them: not of its shape (a missing field, a wrong type), which no version stored.
LATER_RULES = {
    "less_than",
    "less_than_equal",
    "greater_than",
    "greater_than_equal",
    "string_too_long",
    "string_too_short",
    "too_long",
    "too_short",
    "value_error",
    "string_pattern_mismatch",
}
MAX_NESTING = 64  # levels of objects and lists a definition may nest (a real one: about 5)
NEWER_FIELDS = ("min_relative_improvement",)  # TuningJobDefinition.to_json leaves them out
MAX_SEED = 2**32 - 1
MAX_RUNTIME_SECONDS = 10_000_000  # about 115 days
MAX_GPUS_PER_JOB = 1024
GPU_UUID = re.compile(r"(GPU|MIG)-[A-Za-z0-9][A-Za-z0-9._:/-]*")  # as nvidia-smi -L prints them


MEMORY = re.compile(r"[1-9][0-9]{0,15}[kKmMgGtT]?")  # Docker's and Slurm's common ground


def memory_bytes(text: str) -> int:
    """A ``MEMORY`` text in bytes as Docker reads it (no unit: bytes; Slurm reads megabytes)."""
    unit = text[-1].lower() if text[-1].isalpha() else ""
    return int(text.rstrip("kKmMgGtT")) * 1024 ** " kmgt".index(unit or " ")


# sbatch options the Slurm launcher sets itself, and why a job cannot do without them
SLURM_OWN_OPTIONS = {
    "--output": "the log it reads metrics from",
    "--error": "the log it reads metrics from (stderr goes there too)",
    "--export": "the job's environment (TUNER_OUTPUT_DIR, environment:, the tuner's PATH)",
    "--chdir": "the job's folder (working_directory: sets where the program runs)",
    "--job-name": "the training job's name, by which a killed tuner's job is found again",
    "--array": "one job per configuration",
    "--parsable": "how it reads the job's id",
    "--wrap": "the job script that keeps the exit status",
}


def gpu_id(gpu: str | int) -> str | int:
    """One GPU's id spelled one way: an index (``00`` is ``0``, a string stays a string) or a
    UUID as ``nvidia-smi -L`` prints it; ``ValueError`` naming the rule otherwise."""
    text = str(gpu)
    if text.isascii() and text.isdigit() and len(text) <= 6:
        return str(int(text)) if isinstance(gpu, str) else int(text)
    if GPU_UUID.fullmatch(text):
        return gpu
    raise ValueError(
        "gpus must be GPU indices (0, 1, ...) or UUIDs (GPU-..., MIG-...) as nvidia-smi -L "
        f"prints them, got {gpu!r}"
    )


def _leaf(value: Any) -> bool:
    """A value no model is made of (a number, a text, a list of them): kept as it is, it reads
    the same; a nested definition kept as a mapping would not."""
    items = value if isinstance(value, list) else [value]
    return not any(isinstance(item, dict | list) for item in items)


class _Strict(BaseModel):
    # NaN and +-Infinity are refused in every float field (JSON and YAML can spell both);
    # strict: a number field takes numbers only (true was taken as 1 and "4" as 4 before).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _stored_value(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        """A definition read from the store (``from_store``) keeps a value that a limit or rule
        added since it was stored refuses: an older version accepted it and ran the job, and
        refusing it now left the job impossible to describe, resume or stop."""
        try:
            return handler(value)
        except pydantic.ValidationError as exc:
            stored = isinstance(info.context, dict) and info.context.get("stored")
            if stored and _leaf(value) and all(e["type"] in LATER_RULES for e in exc.errors()):
                return value
            raise


class JobDefinition(_Strict):
    """What each training job runs and where.

    ``command`` is an argv list (never a shell string); each hyperparameter is appended as
    ``--name value``, static ones first. ``gpus`` lists the GPU ids the local launcher hands
    out, ``gpus_per_job`` GPUs per job, ``jobs_per_gpu`` jobs sharing one GPU.
    ``max_runtime`` (seconds) stops a job that runs longer; it then counts as failed.
    ``gpus_per_job`` may be a fraction 1/k of a GPU (0.5, 0.25...): k jobs share one GPU, and
    each job sees ``TUNER_GPU_FRACTION`` so it can cap its memory.
    ``launcher="docker"`` runs each job as a container of ``image`` (``command``, optional,
    then comes before the hyperparameters as the container's command), with ``cpus``,
    ``memory`` (e.g. ``"8g"``), ``network`` and ``docker_host``.
    ``launcher="slurm"`` submits each job with ``sbatch``: ``command``, or with ``image`` the
    ``container_command`` (default ``apptainer exec --nv``) then the image then ``command``;
    Slurm assigns the GPUs (``gpus`` is not used), with ``cpus``, ``memory`` (e.g. ``"8G"``),
    ``slurm_partition``, ``slurm_shards_per_gpu`` (what the cluster's gres.conf gives each GPU;
    needed for fractions) and ``slurm_options`` (more ``--option=value`` for sbatch).
    ``output_s3_uri`` (``s3://bucket/prefix``) uploads each job's log and outputs under
    ``<prefix>/<tuning job>/<training job>/`` when it ends (``s3_endpoint_url`` overrides the
    endpoint of boto3's usual configuration, for S3-compatible stores).
    Each job gets its own folder ``<output_path>/<tuning job>/<training job>/`` holding
    ``log.txt`` and ``output/`` (``TUNER_OUTPUT_DIR``); the command runs in
    ``working_directory`` (default: the directory the tuner was started from, made absolute
    when the tuning job is created, so relative script paths work).
    """

    command: list[str] | None = None
    image: str | None = None
    static_hyperparameters: dict[str, StaticValue] = Field(default_factory=dict)
    launcher: Literal["local", "docker", "slurm"] = "local"
    gpus_per_job: float = Field(0, ge=0, le=MAX_GPUS_PER_JOB)
    gpus: list[str | int] = Field(default_factory=list)
    jobs_per_gpu: int = Field(1, ge=1, le=1024)
    max_runtime: float | None = Field(None, gt=0, le=MAX_RUNTIME_SECONDS)
    grace_period: float = Field(10.0, ge=0, le=3600)
    environment: dict[str, str] = Field(default_factory=dict)
    output_path: str = "tuner-runs"
    working_directory: str | None = None
    cpus: float | None = Field(None, gt=0, le=4096)
    memory: str | None = None
    network: str | None = None
    docker_host: str | None = None
    slurm_partition: str | None = None
    slurm_shards_per_gpu: int | None = Field(None, ge=1)
    slurm_options: list[str] = Field(default_factory=list)
    container_command: list[str] = Field(default_factory=lambda: ["apptainer", "exec", "--nv"])
    output_s3_uri: str | None = None
    s3_endpoint_url: str | None = None

    @field_validator("output_s3_uri")
    @classmethod
    def _s3_uri(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                split_s3_uri(value)
            except ValidationError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("command")
    @classmethod
    def _argv(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0]):
            raise ValueError("command must be a non-empty list of arguments, program first")
        for arg in value or []:
            if "\x00" in arg:
                raise ValueError(f"command arguments cannot hold a NUL byte, got {arg!r}")
        return value

    @field_validator("static_hyperparameters", "environment")
    @classmethod
    def _no_nul(cls, value: dict[str, Any]) -> dict[str, Any]:
        for k, v in value.items():
            if "\x00" in k or "=" in k or not k:
                raise ValueError(f"names cannot be empty or hold NUL or '=', got {k!r}")
            if "\x00" in str(v):
                raise ValueError(f"values cannot hold NUL, got {k!r}: {v!r:.80}")
        return value

    @field_validator("static_hyperparameters", mode="before")
    @classmethod
    def _plain_values(cls, value: Any) -> Any:
        """One message per value, not one per type of the union (four lines for a list)."""
        for k, v in value.items() if isinstance(value, dict) else ():
            if not isinstance(v, str | int | float) or (
                isinstance(v, float) and not math.isfinite(v)
            ):
                raise ValueError(
                    "static hyperparameter values must be a string, a finite number or "
                    f"true/false, got {k!r}: {v!r:.80}"
                )
        return value

    @field_validator("static_hyperparameters")
    @classmethod
    def _not_an_option(cls, value: dict[str, Any]) -> dict[str, Any]:
        for k in value:
            if k.startswith("-"):  # as for tuned ones: '--' is added, '---v' reached argv
                raise ValueError(
                    f"static hyperparameter names cannot start with '-' (the job gets --NAME "
                    f"VALUE), got {k!r:.80}"
                )
        return value

    @field_validator("s3_endpoint_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
            raise ValueError(
                f"s3_endpoint_url must be an http:// or https:// URL, got {value!r:.200}"
            )
        return value

    @field_validator("working_directory")
    @classmethod
    def _folder(cls, value: str | None) -> str | None:
        if value is not None and (not value or "\x00" in value):
            raise ValueError(f"working_directory must be a path without NUL, got {value!r:.80}")
        return value

    @field_validator("gpus")
    @classmethod
    def _gpu_ids(cls, value: list[str | int]) -> list[str | int]:
        """Each id is one GPU, spelled one way: an index (``0``; ``00`` is ``0``) or a UUID as
        ``nvidia-smi -L`` prints it (``GPU-...``, ``MIG-...``), so that two spellings of one
        GPU (or ``"0,1"``, two GPUs) cannot take two sets of slots."""
        ids = [gpu_id(gpu) for gpu in value]
        names = [str(gpu) for gpu in ids]
        if len(set(names)) != len(names):
            raise ValueError(f"gpus must name each GPU once, got {value}")
        return ids

    @field_validator("gpus_per_job")
    @classmethod
    def _gpu_share(cls, value: float) -> float:
        if value >= 1 and value != int(value):
            raise ValueError(f"gpus_per_job above 1 must be a whole number, got {value:g}")
        if 0 < value < 1 and abs(1 / value - round(1 / value)) > 1e-6:
            raise ValueError(
                f"gpus_per_job below 1 must be 1/k of a GPU (0.5, 0.25, ...), got {value:g}"
            )
        return value

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        if value is not None and not MEMORY.fullmatch(value):
            raise ValueError(
                "memory must be a whole number with an optional unit k, m, g or t (512m, 8g, "
                f"32G), got {value!r}"
            )
        return value

    @field_validator("slurm_options")
    @classmethod
    def _long_options(cls, value: list[str]) -> list[str]:
        for option in value:
            if not option.startswith("--") or "\x00" in option:
                raise ValueError(f"slurm_options must be like --qos=high, got {option!r}")
            name = option.split("=", 1)[0]
            if name in SLURM_OWN_OPTIONS:
                raise ValueError(
                    f"slurm_options must not set {name}: the tuner sets it, "
                    f"{SLURM_OWN_OPTIONS[name]}; got {option!r}"
                )
        return value

    @property
    def argv_prefix(self) -> list[str]:
        """What comes before the hyperparameters in each job's argv."""
        if self.launcher == "slurm" and self.image:
            return [*self.container_command, self.image, *(self.command or [])]
        return list(self.command or [])

    @model_validator(mode="after")
    def _one_target(self) -> JobDefinition:
        if self.launcher == "slurm":
            if self.command is None and self.image is None:
                raise ValueError("launcher='slurm' needs a command (argv) or an image")
            if 0 < self.gpus_per_job < 1 and not self.slurm_shards_per_gpu:
                raise ValueError(
                    f"gpus_per_job={self.gpus_per_job:g} on Slurm needs slurm_shards_per_gpu "
                    "(the shards the cluster's gres.conf gives each GPU)"
                )
            from tuner.launchers.slurm import sbatch_resources

            sbatch_resources(self.gpus_per_job, self.slurm_shards_per_gpu)  # whole shards
            return self
        if self.launcher == "docker" and not self.image:
            raise ValueError("launcher='docker' needs an image")
        memory = self.memory or ""
        if (
            self.launcher == "docker"
            and memory
            and (memory[-1] in "tT" or memory_bytes(memory) < 6 << 20)
        ):
            raise ValueError(
                "memory on Docker must be at least 6m, in bytes or with the unit k, m or g "
                f"(the engine's least and its units; 2048m for 2t), got {memory!r}"
            )
        if self.launcher == "local" and self.image is not None:
            raise ValueError(
                f"image={self.image!r} needs launcher='docker'; the local launcher runs a command"
            )
        if self.launcher == "local" and self.command is None:
            raise ValueError("a job definition for the local launcher needs a command (argv)")
        if self.gpus_per_job > 0 and math.ceil(self.gpus_per_job) > len(self.gpus):
            raise ValueError(
                f"gpus_per_job={self.gpus_per_job:g} needs at least "
                f"{math.ceil(self.gpus_per_job)} ids in gpus, got gpus={self.gpus}"
            )
        return self


class HyperbandConfig(_Strict):
    """``strategy_config`` of the Hyperband strategy.

    Each job trains with the static hyperparameter ``resource`` (default ``epochs``) set to
    ``max_resource`` (default: its static value) and reports the objective once per unit of
    resource; rungs sit at ``min_resource * reduction_factor**i``. ``sampler`` is ``Random``
    or ``Bayesian`` (a GP on the highest rung with enough results, as BOHB). ``brackets``
    keeps only the most aggressive brackets (1: ASHA); default all (Hyperband).
    """

    resource: str = "epochs"
    min_resource: int = Field(1, ge=1)
    max_resource: int | None = Field(None, ge=1)
    reduction_factor: int = Field(3, ge=2)
    brackets: int | None = Field(None, ge=1)
    sampler: str = "Random"

    @field_validator("sampler", mode="before")
    @classmethod
    def _sampler_any_case(cls, value: Any) -> Any:
        """``bayesian`` is ``Bayesian``, as a strategy's name is matched without regard to case."""
        return canonical(value, HYPERBAND_SAMPLERS)


class EarlyStoppingOptions(_Strict):
    """Options of the median stopping rule (``early_stopping_type="Auto"``): a job is judged at
    step k only when k > ``warmup_steps`` and at least ``min_jobs`` others reached step k."""

    min_jobs: int = Field(3, ge=1)
    warmup_steps: int = Field(1, ge=0)


class MetricDefinitionSpec(_Strict):
    Name: str
    Regex: str


HYPERBAND_CONFIG_KEYS = {"min_resource", "max_resource", "reduction_factor", "brackets", "sampler"}


class TuningJobDefinition(_Strict):
    """Everything a tuning job is made of (see HyperparameterTuner for each field)."""

    name: str | None = Field(None, pattern=NAME_PATTERN)
    job_definition: JobDefinition
    objective_metric_name: str
    objective_type: Literal["Maximize", "Minimize"] = "Maximize"
    objective_aggregation: Literal["Last", "Best"] = "Last"
    hyperparameter_ranges: dict[str, dict[str, Any]]
    metric_definitions: list[MetricDefinitionSpec]
    strategy: str = "Bayesian"
    strategy_options: dict[str, Any] = Field(default_factory=dict)
    strategy_config: dict[str, Any] = Field(default_factory=dict)
    early_stopping_type: Literal["Auto", "Off"] = "Off"
    early_stopping_options: EarlyStoppingOptions = Field(
        default_factory=lambda: EarlyStoppingOptions.model_validate({})
    )
    max_jobs: int = Field(..., ge=1, le=MAX_JOBS)  # a Grid's default: its size (_grid_size)
    max_parallel_jobs: int = Field(1, ge=1)
    max_failed_jobs: int | None = Field(None, ge=1, le=MAX_JOBS)
    random_seed: int | None = Field(None, ge=0, le=MAX_SEED)
    target_objective_value: float | None = None
    max_jobs_without_improvement: int | None = Field(None, ge=1, le=MAX_JOBS)
    min_relative_improvement: float = Field(0.0, ge=0, le=1)
    max_tuning_runtime: float | None = Field(None, gt=0, le=MAX_RUNTIME_SECONDS)
    tags: dict[str, str] = Field(default_factory=dict)
    tracking_uri: str | None = None

    @field_validator("tracking_uri")
    @classmethod
    def _tracking_uri(cls, value: str | None) -> str | None:
        return None if value is None else check_tracking_uri(value)

    warm_start_config: WarmStartConfig | None = None

    @field_validator("hyperparameter_ranges")
    @classmethod
    def _ranges(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        normalized = {}
        for name, spec in value.items():
            try:
                normalized[name] = parameter_from_dict(spec).to_dict()
            except ValidationError as exc:
                raise ValueError(f"{name}: {exc}") from None
        SearchSpace({n: parameter_from_dict(s) for n, s in normalized.items()})
        return normalized

    @field_validator("metric_definitions")
    @classmethod
    def _metric_regexes(
        cls, value: list[MetricDefinitionSpec], info: ValidationInfo
    ) -> list[MetricDefinitionSpec]:
        if isinstance(info.context, dict) and info.context.get("stored"):
            return value  # as ``_Strict._stored_value``: read what an older version took
        for spec in value:
            check_metric_name(spec.Name)
            MetricDefinition(spec.Name, spec.Regex).check_matches_text()
        return value

    @field_validator("early_stopping_options")
    @classmethod
    def _options_need_auto(
        cls, value: EarlyStoppingOptions, info: ValidationInfo
    ) -> EarlyStoppingOptions:
        """Options of the median rule other than its defaults, given while it is off, are
        refused: the user meant it on (``early_stopping_type: Auto``), and nothing would stop."""
        if isinstance(info.context, dict) and info.context.get("stored"):
            return value
        off = info.data.get("early_stopping_type") == "Off"
        if off and value != EarlyStoppingOptions.model_validate({}):
            raise ValueError(
                "early_stopping_options apply to the median stopping rule, which is on only "
                f"with early_stopping_type='Auto'; got 'Off' with {value.model_dump()}"
            )
        return value

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, value: str) -> str:
        return strategy_name(value)

    @field_validator(
        "objective_type", "objective_aggregation", "early_stopping_type", mode="before"
    )
    @classmethod
    def _any_case(cls, value: Any, info: ValidationInfo) -> Any:
        """``maximize`` is ``Maximize``, as a strategy's name is matched without regard to
        case; anything else is left for the field's own check to name."""
        return canonical(value, get_args(cls.model_fields[str(info.field_name)].annotation))

    @model_validator(mode="before")
    @classmethod
    def _grid_size(cls, data: Any) -> Any:
        """``max_jobs`` left out of a Grid: the grid's size (SageMaker works it out the same
        way), and ``max_parallel_jobs`` at most that (a comparison's one ``max_parallel_jobs``
        for a small grid was refused against a ``max_jobs`` nobody gave); every other strategy
        needs it. A definition the grid cannot be built from is left as it is, for the other
        checks to name what is wrong."""
        if not isinstance(data, dict) or data.get("max_jobs") is not None:
            return data
        try:
            if strategy_name(data.get("strategy", "Bayesian")) != "Grid":
                return data
            ranges = data["hyperparameter_ranges"].items()
            space = SearchSpace({n: parameter_from_dict(s) for n, s in ranges})
        except Exception:  # malformed: the field checks say what is wrong
            return data
        try:
            grid = make_strategy("Grid", space, options=data.get("strategy_options"))
        except ValidationError as exc:  # too large a grid, a bad option: the grid's own words
            raise ValueError(str(exc)) from None
        assert isinstance(grid, GridStrategy)
        if grid.size > MAX_JOBS:
            raise ValueError(
                f"max_jobs left out runs the whole grid, which must hold at most {MAX_JOBS} "
                f"configurations, got {grid.size}: give max_jobs"
            )
        parallel = data.get("max_parallel_jobs")
        if isinstance(parallel, int) and not isinstance(parallel, bool) and parallel > grid.size:
            data = {**data, "max_parallel_jobs": grid.size}  # no more than there is to run
        return {**data, "max_jobs": grid.size}

    @model_validator(mode="after")
    def _consistent(self) -> TuningJobDefinition:
        _check_text(self.model_dump(), "")
        if self.max_parallel_jobs > self.max_jobs:
            raise ValueError(
                "max_parallel_jobs <= max_jobs must hold, got "
                f"max_parallel_jobs={self.max_parallel_jobs}, max_jobs={self.max_jobs}"
            )
        self.metrics()
        both = set(self.job_definition.static_hyperparameters) & set(self.hyperparameter_ranges)
        if both:
            raise ValueError(
                f"a hyperparameter is either static or tuned, not both; got {sorted(both)} in both"
            )
        self._check_stopping()
        self._check_warm_start()
        # The strategy is built here, by the code that runs it, so that its options are
        # checked (names, types, values, grid size) before anything is stored or started.
        make_strategy(
            self.strategy, self.space(), self.maximize, self.random_seed, self.strategy_arguments()
        )
        return self

    def _check_warm_start(self) -> None:
        """The strategy takes this warm-start type; a job is not its own parent (the parents
        themselves are read and checked when the job is created: ``tuner.warm_start``)."""
        warm = self.warm_start_config
        if warm is None:
            return
        if self.name is not None and self.name in warm.parents:
            raise ValueError(
                f"warm_start_config.parents: a tuning job cannot be its own parent, got "
                f"{self.name!r} among {warm.parents}"
            )
        cls = strategy_class(self.strategy)
        if warm.type not in cls.warm_start_types:
            raise ValueError(
                f"warm_start_config.type: strategy {self.strategy!r} takes "
                f"{list(cls.warm_start_types) or 'no warm start'}, got {warm.type!r}"
                f"{cls.warm_start_refusal}"
            )

    def _check_stopping(self) -> None:
        """Hyperband's config against the job; early stopping options (see HyperbandConfig)."""
        MedianStoppingRule(self.maximize, **self.early_stopping_options.model_dump())
        if self.strategy != "Hyperband":
            if self.strategy_config:
                raise ValueError(
                    f"strategy_config is for strategy='Hyperband', got strategy={self.strategy!r} "
                    f"with strategy_config={self.strategy_config!r}"
                )
            return
        if self.early_stopping_type == "Auto":
            raise ValueError(
                "Hyperband stops jobs at its own rungs: early_stopping_type must be 'Off' "
                "with strategy='Hyperband', got 'Auto'"
            )
        config = self.hyperband()
        HyperbandRungs(
            self.maximize,
            config.min_resource,
            config.max_resource or 0,
            config.reduction_factor,
            config.brackets,
        )

    def hyperband(self) -> HyperbandConfig:
        """The validated Hyperband config, ``max_resource`` filled in from the static value."""
        try:
            config = HyperbandConfig.model_validate(self.strategy_config)
        except pydantic.ValidationError as exc:
            raise ValueError(
                explain(exc).replace("tuning job definition", "strategy_config")
            ) from None
        if config.sampler not in HYPERBAND_SAMPLERS:
            raise ValueError(
                f"Hyperband samples with one of {list(HYPERBAND_SAMPLERS)}, got "
                f"sampler={config.sampler!r}"
            )
        resource, static = config.resource, self.job_definition.static_hyperparameters
        if resource in self.hyperparameter_ranges:
            raise ValueError(
                f"Hyperband decides how long each job trains: resource {resource!r} must be a "
                "static hyperparameter (set to max_resource), not a tuned range"
            )
        if resource not in static:
            raise ValueError(
                f"Hyperband's resource {resource!r} is not a hyperparameter of the job: add it "
                "to job_definition.static_hyperparameters (each job runs with max_resource)"
            )
        try:  # a number or its text (static values reach the job as argv text); not a bool
            value = math.nan if isinstance(static[resource], bool) else float(static[resource])
        except (TypeError, ValueError):
            value = math.nan
        if not value.is_integer() or value < 1:
            raise ValueError(
                f"Hyperband's resource {resource!r} must be a whole number >= 1, "
                f"got {static[resource]!r}"
            )
        if config.max_resource is None:
            config.max_resource = int(value)
        elif config.max_resource != int(value):
            raise ValueError(
                f"max_resource must equal the static {resource}, got max_resource="
                f"{config.max_resource}, {resource}={static[resource]!r}"
            )
        return config

    def strategy_arguments(self) -> dict[str, Any]:
        """Keyword arguments of the strategy: ``strategy_options`` and, for Hyperband, its
        resources, reduction factor and sampler."""
        if self.strategy != "Hyperband":
            return dict(self.strategy_options)
        config = self.hyperband()
        clash = sorted(set(self.strategy_options) & HYPERBAND_CONFIG_KEYS)
        if clash:  # they would be overwritten by strategy_config's values (or its defaults)
            raise ValueError(
                f"Hyperband's {', '.join(clash)} belong in strategy_config (SageMaker's "
                "HyperbandStrategyConfig), not strategy_options; got strategy_options="
                f"{ {k: self.strategy_options[k] for k in clash} }"
            )
        return {
            **self.strategy_options,
            "min_resource": config.min_resource,
            "max_resource": config.max_resource,
            "reduction_factor": config.reduction_factor,
            "brackets": config.brackets,
            "sampler": config.sampler,
        }

    @classmethod
    def from_store(cls, data: dict[str, Any], name: str) -> TuningJobDefinition:
        """A definition as stored, by this or an older version: a number or text that a limit
        added since refuses is kept (``_Strict._stored_value``; so are metric names beyond the
        255-character limit); a stored definition that breaks another rule added since is one
        ``ValidationError`` saying it was stored."""
        problem = f"tuning job {name!r} was stored with a definition this version cannot read"
        try:
            return cls.model_validate(plain(data), context={"stored": True})
        except pydantic.ValidationError as exc:
            raise ValidationError(f"{problem} (an older version's?): {explain(exc)}") from None
        except (TypeError, AttributeError, KeyError) as exc:  # a check met a value it never sees
            raise ValidationError(f"{problem}: {exc!r}") from None

    @classmethod
    def parse(cls, data: Any) -> TuningJobDefinition:
        """Validate a mapping; raise one ``ValidationError`` listing every problem."""
        if isinstance(data, TuningJobDefinition):
            return data
        if not isinstance(data, dict):
            raise ValidationError(f"a tuning job definition must be a mapping, got {data!r:.80}")
        if _deeper_than(data, MAX_NESTING):  # 500 levels overflowed Python's recursion: a 500
            raise ValidationError(
                f"a tuning job definition nests objects and lists at most {MAX_NESTING} deep, "
                "this one deeper"
            )
        try:
            return cls.model_validate(plain(data))
        except pydantic.ValidationError as exc:
            raise ValidationError(explain(exc)) from None

    @classmethod
    def load(cls, path: str | Path) -> TuningJobDefinition:
        """Read and validate a YAML (or JSON) file."""
        return cls.parse(read_yaml_file(path, "tuning job definition"))

    def space(self) -> SearchSpace:
        return SearchSpace(
            {n: parameter_from_dict(s) for n, s in self.hyperparameter_ranges.items()}
        )

    def metrics(self) -> list[MetricDefinition]:
        return validate_metric_definitions(
            [m.model_dump() for m in self.metric_definitions], self.objective_metric_name
        )

    @property
    def maximize(self) -> bool:
        return self.objective_type == "Maximize"

    @property
    def aggregation(self) -> ObjectiveAggregation:
        return ObjectiveAggregation(self.objective_aggregation)

    def to_json(self) -> dict[str, Any]:
        """The definition as stored and sent to a service; fields added since the last release
        are left out while they hold their default, so that an older service (or an older
        process on the same database) still reads it."""
        data = self.model_dump(mode="json")
        for name in NEWER_FIELDS:
            if data.get(name) == type(self).model_fields[name].default:
                data.pop(name)
        return data


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether mappings and lists nest more than ``limit`` deep in ``data`` (no recursion)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def check_working_directory(job: JobDefinition) -> None:
    """Raise ``ValidationError`` when a local launcher's ``working_directory`` is not a folder.

    Called when a tuning job is created (every job would fail at start otherwise), not when a
    stored definition is read again: the folder may have gone since. Docker and Slurm resolve
    the path on their own hosts, so it is not checked for them."""
    folder = job.working_directory
    if job.launcher == "local" and folder is not None and not Path(folder).is_dir():
        raise ValidationError(
            f"job_definition.working_directory must be an existing folder for the local "
            f"launcher, got {folder!r:.200}"
        )


def _check_text(value: Any, where: str) -> None:
    """Every text of the definition (keys too) is Unicode that UTF-8 can encode: a lone
    surrogate (JSON's ``\\ud800``) cannot be written to a log, argv or a response."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{where}: text must be encodable as UTF-8 (no lone surrogate), got "
                f"{value!r:.80} ({exc.reason} at character {exc.start})"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            place = f"{where}.{key}".lstrip(".")
            _check_text(key, place)
            _check_text(item, place)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_text(item, f"{where}[{i}]")


def read_yaml_file(path: str | Path, what: str) -> Any:
    """The YAML (or JSON) mapping in ``path``. ``ValidationError`` naming the file and ``what``
    it should hold when it cannot be read, is not UTF-8 text, is empty, is not YAML, or holds
    something other than a mapping (only comments, a list)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read {what} {path}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): a {what} is a YAML "
            "or JSON file"
        ) from None
    if not text.strip():
        raise ValidationError(f"{path} is empty: a {what} is a YAML or JSON mapping")
    try:
        data = yaml_text.load(text)
    except yaml.YAMLError as exc:
        raise ValidationError(
            f"{path} is not valid YAML: {str(exc).replace('<unicode string>', str(path))}"
        ) from None
    if not isinstance(data, dict):  # only comments, a list, a scalar: say which file
        raise ValidationError(f"{path} holds {data!r:.80}: a {what} is a YAML or JSON mapping")
    return data


def explain(exc: pydantic.ValidationError) -> str:
    """Turn pydantic's errors into lines of ``field: rule, got value``."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "definition"
        message = re.sub(r"^Value error, ", "", error["msg"])
        message = message.replace(", got a number with a fractional part", " (a whole number)")
        if error["type"] == "int_type":  # strict: no bool, text or 4.0 taken for a number
            message = "Input should be a valid integer (a whole number)"
        if error["type"] == "missing":
            message = "required, missing"
        if error["type"] in ("value_error", "assertion_error", "missing") or "input" not in error:
            lines.append(f"{where}: {message}")
        else:
            lines.append(f"{where}: {message}, got {error['input']!r:.200}")
    return "invalid tuning job definition:\n  " + "\n  ".join(lines)
