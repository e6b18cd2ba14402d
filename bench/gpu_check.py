"""The one command that proves the GPU path: throughput, a trainer smoke, packing, a comparison.

    python bench/gpu_check.py            # on a GPU machine: at most ~8 minutes, no network
    python bench/gpu_check.py --cpu      # the same steps, tiny, on the CPU (the test suite runs it)
    python bench/gpu_check.py --cpu --compile   # ... with torch.compile too (15 minutes here)
    python bench/gpu_check.py --steps a b       # only some steps (a short device lease)

Steps, each a real process as a user would run it:
  (a) ``bench/train_throughput.py``: the trainer's step, eager and compiled, batch 512;
  (b) the trainer on generated CIFAR-format data under ``torchrun`` (one process): bf16,
      channels_last, ``--compile``, ONNX export, then a restart that resumes from its checkpoint
      and trains two more epochs (the second one's images/s is the trainer's end to end);
  (c) ``bench/gpu_packing.py``: 1, 2, 4 and 8 trials sharing one GPU (``gpus_per_job`` 1/N);
  (d) ``tuner compare``: Random against Bayesian, ResNet-34 trials compiled and sharing the GPU
      (``gpus_per_job: 0.25``, 4 at a time, 8 per arm), so later trials start from the compile
      cache that the first ones wrote;
  (e) early stopping on the GPU: a Hyperband tuning job of compiled trials sharing the GPU (judged
      at epochs 1 and 2 of 4): every stopped trial ends ``Stopped`` at its rung, and no trainer,
      compile worker or GPU context of any trial outlives the tuning job.
It prints one table (check, figure, value, verdict) and exits 1 if any step or training job
failed or any figure is missing; ``--json FILE`` writes the rows. The goals shown beside the
figures are issue 12's (H100): 45,000 images/s compiled, later trials' compile under 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOAL_IMAGES_PER_SECOND = 45_000
GOAL_WARM_COMPILE_SECONDS = 15.0


@dataclass
class Row:
    check: str
    figure: str
    value: str
    ok: bool
    note: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(self, check: str, figure: str, value: Any, ok: bool = True, note: str = "") -> None:
        text = f"{value:,.1f}" if isinstance(value, float) else str(value)
        self.append(Row(check, figure, text, ok, note))

    def missing(self, check: str, figure: str, why: str) -> None:
        self.append(Row(check, figure, "missing", False, why[-300:]))

    def append(self, row: Row) -> None:
        """Keep ``row`` and print it at once: a run cut off by a time limit still shows it."""
        self.rows.append(row)
        verdict = "ok" if row.ok else "FAIL"
        print(f"    {row.check} | {row.figure} | {row.value} | {verdict} | {row.note}", flush=True)

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    def print(self) -> None:
        widths = [max(len(getattr(r, a)) for r in self.rows) for a in ("check", "figure", "value")]
        for r in self.rows:
            verdict = "ok" if r.ok else "FAIL"
            print(
                f"{r.check:<{widths[0]}}  {r.figure:<{widths[1]}}  {r.value:>{widths[2]}}  "
                f"{verdict:<4}  {r.note}"
            )


def run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``argv`` from the repository root; (exit code, stdout+stderr). The time limits only
    catch a hung step; they are far above what a step takes on an idle machine."""
    try:
        done = subprocess.run(
            argv,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return 124, f"{out}\ntimed out after {timeout:.0f} s"
    return done.returncode, done.stdout + done.stderr


def figure(pattern: str, text: str) -> list[float]:
    return [float(v) for v in re.findall(pattern, text)]


@dataclass(frozen=True)
class Setting:
    gpu: bool
    compile: bool  # always on a GPU; on the CPU only when asked (it takes minutes there)
    folder: Path


def check_throughput(report: Report, at: Setting) -> None:
    gpu = at.gpu
    out = at.folder / "throughput.json"
    modes = ["eager", "compiled"] if at.compile else ["eager"]
    argv = [sys.executable, "bench/train_throughput.py", "--modes", *modes, "--json", str(out)]
    if not gpu:
        argv += ["--batch", "4", "--steps", "1", "--warmup", "1"]
    code, text = run(argv, timeout=900)
    if code != 0 or not out.exists():
        report.missing("(a) throughput", "images/s", text)
        return
    figures = json.loads(out.read_text())
    for mode in modes:
        rate = figures[mode]["images_per_second"]
        goal = gpu and mode == "compiled"
        report.add(
            "(a) throughput",
            f"{mode} images/s (batch {figures['batch']})",
            rate,
            ok=rate > 0,
            note=(
                f"goal {GOAL_IMAGES_PER_SECOND:,}: "
                f"{'met' if rate >= GOAL_IMAGES_PER_SECOND else 'NOT met'}; "
                f"{figures[mode]['fraction_of_reference']:.1%} of bf16 matmul"
                if goal
                else f"{figures[mode]['fraction_of_reference']:.1%} of the matmul reference"
            ),
        )
    if at.compile:
        ratio = figures["compiled"]["images_per_second"] / figures["eager"]["images_per_second"]
        report.add("(a) throughput", "compiled / eager", f"{ratio:.2f}x")


def trainer_argv(data: Path, out: Path, at: Setting, epochs: int) -> list[str]:
    size = ["--batch_size", "512"] if at.gpu else ["--batch_size", "8", "--stem", "imagenet"]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=1",
        "-m",
        "training_container.train",
        "--data_dir",
        str(data),
        "--epochs",
        str(epochs),
        "--output_dir",
        str(out / "output"),
        "--checkpoint_dir",
        str(out / "checkpoint"),
        "--onnx",
        *(["--compile"] if at.compile else []),
        "--lr_schedule",
        "constant",
        "--learning_rate",
        "0.02",
        *size,
    ]


def cifar_data(at: Setting) -> Path:
    """Generated data in the CIFAR-10 layout, written once per check: CIFAR-10's own size on a
    GPU (50,000 training images, so an epoch is long enough to time), tiny on the CPU."""
    from training_container.synthetic import write_cifar

    data = at.folder / "cifar"
    if not data.exists():
        write_cifar(data, per_batch=10_000 if at.gpu else 12)
    return data


def check_trainer(report: Report, at: Setting) -> None:
    gpu, folder = at.gpu, at.folder
    data = cifar_data(at)
    out = folder / "smoke"
    env = {"TORCHINDUCTOR_CACHE_DIR": str(folder / "compile-cache"), "OMP_NUM_THREADS": "2"}
    code, first = run(trainer_argv(data, out, at, 1), timeout=900, env=env)
    name = "(b) trainer"
    if code != 0:
        report.missing(name, "first run under torchrun", first)
        return
    line = re.search(r"precision=(\w+) memory_format=(\w+)", first)
    seen = line.groups() if line else ("missing",)
    expected = ("bf16", "channels_last") if gpu else ("fp32", "contiguous")
    report.add(name, "precision, memory format", " ".join(seen), ok=seen == expected)
    figures = [("start-up s", r"startup: seconds=([0-9.]+)")]
    if at.compile:
        figures.append(("compile s (cold cache)", r"compile: seconds=([0-9.]+)"))
    for label, pattern in figures:
        values = figure(pattern, first)
        report.add(name, label, values[0]) if values else report.missing(name, label, first)
    report.add(
        name,
        "model.onnx written",
        (out / "output" / "model.onnx").exists(),
        ok=(out / "output" / "model.onnx").exists(),
    )
    # The restart trains epochs 1 and 2: epoch 1 holds the (warm) compile, epoch 2 is steady.
    code, second = run(trainer_argv(data, out, at, 3), timeout=900, env=env)
    resumed = code == 0 and "after epoch 0" in second and "[Epoch 1] validation" in second
    report.add(
        name,
        "restart resumes after epoch 0",
        resumed,
        ok=resumed,
        note="" if resumed else second[-300:],
    )
    steady = figure(r"\[Epoch 2\] throughput: images/s=([0-9.]+)", second)
    if steady:
        rate = steady[0]
        report.add(
            name,
            "images/s end to end, epoch 2",
            rate,
            note=(
                f"goal {GOAL_IMAGES_PER_SECOND:,} end to end: "
                f"{'met' if rate >= GOAL_IMAGES_PER_SECOND else 'NOT met'}"
                if gpu and at.compile
                else ""
            ),
        )
    else:
        report.missing(name, "images/s, epoch 2", second)
    warm = figure(r"compile: seconds=([0-9.]+)", second)
    if not at.compile:
        return
    if warm:
        report.add(
            name,
            "compile s (warm cache)",
            warm[0],
            ok=not gpu or warm[0] < GOAL_WARM_COMPILE_SECONDS,
            note=f"goal < {GOAL_WARM_COMPILE_SECONDS:g}" if gpu else "",
        )
    else:
        report.missing(name, "compile s (warm cache)", second)


def check_packing(report: Report, at: Setting) -> None:
    out = at.folder / "packing.json"
    levels = ["1", "2", "4", "8"] if at.gpu else ["1", "2"]
    size = ["--epochs", "4", "--batch", "256"]
    if not at.gpu:
        size = ["--epochs", "1", "--batch", "128", "--stem", "imagenet"]
    code, text = run(
        [sys.executable, "bench/gpu_packing.py", "--levels", *levels, *size, "--json", str(out)],
        timeout=900,
    )
    if code != 0 or not out.exists():
        report.missing("(c) packing", "total images/s", text)
        return
    rows = json.loads(out.read_text())["levels"]
    reference = rows[0]["images_per_second"]
    for row in rows:
        report.add(
            "(c) packing",
            f"{row['trials']} trial(s) on one GPU, images/s",
            row["images_per_second"],
            note=f"{row['images_per_second'] / reference:.2f}x one trial",
        )


def comparison_spec(
    data: Path, at: Setting, name: str = "gpu-check", epochs: int = 2
) -> dict[str, Any]:
    """Step (d)'s comparison (Random against Bayesian); step (e) replaces its arms."""
    gpu, folder = at.gpu, at.folder
    static: dict[str, Any] = {"data_dir": str(data), "epochs": epochs, "lr_schedule": "constant"}
    static.update({"batch_size": 256} if gpu else {"batch_size": 8, "stem": "imagenet"})
    command = [sys.executable, "-m", "training_container.train"]
    if at.compile:  # a flag: it goes before the --name value pairs
        command.append("--compile")
    jobs, parallel = (8, 4) if gpu else (2, 2)
    return {
        "name": name,
        "seeds": [0],
        "objective_metric_name": "validation-accuracy",
        "objective_type": "Maximize",
        "metric_definitions": [
            {"Name": "validation-accuracy", "Regex": r"validation: accuracy=([0-9.]+)"},
            {"Name": "startup-seconds", "Regex": r"startup: seconds=([0-9.]+)"},
            {"Name": "compile-seconds", "Regex": r"compile: seconds=([0-9.]+)"},
        ],
        "hyperparameter_ranges": {
            "learning_rate": {
                "type": "continuous",
                "min_value": 0.001,
                "max_value": 0.1,
                "scaling_type": "Logarithmic",
            },
            "momentum": {"type": "continuous", "min_value": 0.5, "max_value": 0.95},
        },
        "job_definition": {
            "command": command,
            "static_hyperparameters": static,
            "working_directory": str(ROOT),
            "output_path": str(folder / "runs" / name),
            "gpus": ["0"] if gpu else [],
            "gpus_per_job": 0.25 if gpu else 0,
            # The marker lets step (e) find every process of its trials, compile workers too.
            "environment": {"PYTHONUNBUFFERED": "1", "GPU_CHECK_RUN": str(folder / name)},
            "grace_period": 10,
        },
        "arms": [
            {
                "name": "random",
                "strategy": "Random",
                "max_jobs": jobs,
                "max_parallel_jobs": parallel,
            },
            {
                "name": "bayesian",
                "strategy": "Bayesian",
                "max_jobs": jobs,
                "max_parallel_jobs": parallel,
            },
        ],
    }


def tuner_compare(spec: dict[str, Any], folder: Path) -> tuple[int, str, str]:
    """``tuner compare`` of ``spec`` into ``folder``: (exit code, output, the store's URL)."""
    import yaml

    name = spec["name"]
    spec_file = folder / f"{name}.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    db = f"sqlite:///{folder / f'{name}.db'}"
    argv = [sys.executable, "-m", "tuner", "--storage", db, "compare", str(spec_file)]
    argv += ["--no-progress", "--report-dir", str(folder / f"{name}-report")]
    code, text = run(argv, timeout=900)
    return code, text, db


def add_jobs_row(
    report: Report,
    check: str,
    figure: str,
    jobs: list[Any],
    allowed: set[str],
    code: int,
    text: str,
) -> None:
    """``figure``: how many of ``jobs`` ended in an ``allowed`` status; a failure unless all
    did and ``tuner compare`` exited 0 (the note: the first three others, or its output)."""
    bad = [j for j in jobs if j.status.value not in allowed]
    report.add(
        check,
        figure,
        f"{len(jobs) - len(bad)}/{len(jobs)}",
        ok=code == 0 and bool(jobs) and not bad,
        note="; ".join(f"{j.name}: {j.status.value} {j.failure_reason}" for j in bad[:3])
        or ("" if code == 0 else text[-300:]),
    )


def check_comparison(report: Report, at: Setting) -> None:
    from tuner.storage import Store

    gpu, folder = at.gpu, at.folder
    code, text, db = tuner_compare(comparison_spec(cifar_data(at), at), folder)
    name = "(d) tuner compare"
    store = Store(db)
    try:
        jobs = [j for t in store.list_tuning_jobs() for j in store.list_training_jobs(t.name)]
        add_jobs_row(report, name, "training jobs completed", jobs, {"Completed"}, code, text)
        written = (folder / "gpu-check-report").exists()
        report.add(name, "report written", written, ok=written)

        def values(metric: str, first_wave: bool | None = None) -> list[float]:
            out = []
            for j in jobs:
                if first_wave is not None and (j.number <= 4) != first_wave:
                    continue
                points = store.metric_points(j.name, metric)
                out += [p.value for p in points[:1] if p.value is not None]
            return out

        startup = values("startup-seconds")
        if startup:
            report.add(name, "median start-up s per trial", statistics.median(startup))
        else:
            report.missing(name, "median start-up s per trial", text)
        if at.compile:
            cold, warm = values("compile-seconds", True), values("compile-seconds", False)
            if cold and warm:
                report.add(name, "median compile s, first 4 trials", statistics.median(cold))
                report.add(
                    name,
                    "median compile s, later trials",
                    statistics.median(warm),
                    ok=not gpu or statistics.median(warm) < GOAL_WARM_COMPILE_SECONDS,
                    note=f"goal < {GOAL_WARM_COMPILE_SECONDS:g} (shared compile cache)",
                )
            else:
                report.missing(name, "compile s per trial", text)
    finally:
        store.close()


def check_early_stopping(report: Report, at: Setting) -> None:
    from tuner.storage import Store

    epochs = 4 if at.gpu else 2
    spec = comparison_spec(cifar_data(at), at, name="early-stopping", epochs=epochs)
    spec["arms"] = [
        {
            "name": "hyperband",
            "strategy": "Hyperband",
            "max_jobs": 8 if at.gpu else 4,
            "max_parallel_jobs": 4 if at.gpu else 2,
            "strategy_config": {"min_resource": 1, "max_resource": epochs, "reduction_factor": 2},
        }
    ]
    before = {line.split(",")[0] for line in gpu_contexts()} if at.gpu else set()
    code, text, db = tuner_compare(spec, at.folder)
    name = "(e) early stopping"
    left = processes_marked(str(at.folder / "early-stopping"))
    store = Store(db)
    try:
        jobs = [j for t in store.list_tuning_jobs() for j in store.list_training_jobs(t.name)]
        ended = {"Completed", "Stopped"}
        add_jobs_row(report, name, "training jobs Completed or Stopped", jobs, ended, code, text)
        stopped = [j for j in jobs if j.status.value == "Stopped"]
        rung = [j for j in stopped if (j.failure_reason or "").startswith("early stopping at")]
        report.add(
            name,
            "stopped early at a rung",
            len(rung),
            ok=bool(rung) and len(rung) == len(stopped),
            note=", ".join(sorted({str(j.failure_reason) for j in stopped})),
        )
        steps = sum(len(store.metric_points(j.name, "validation-accuracy")) for j in jobs)
        full = len(jobs) * epochs
        report.add(
            name,
            "epochs trained / full budget",
            f"{steps}/{full}",
            ok=0 < steps < full,
            note=f"{1 - steps / full:.0%} of the epochs saved" if full else "",
        )
        add_none_left(report, name, "trial processes left", left)
        if at.gpu:
            contexts = [c for c in gpu_contexts() if c.split(",")[0] not in before]
            add_none_left(report, name, "GPU contexts left", contexts)
    finally:
        store.close()


def add_none_left(report: Report, check: str, figure: str, found: list[str]) -> None:
    """``figure``: how many were ``found``; a failure unless none (the note: the first three)."""
    report.add(check, figure, len(found), ok=not found, note="; ".join(found[:3]))


def processes_marked(run: str) -> list[str]:
    """'pid: command' of every live process whose environment holds ``GPU_CHECK_RUN=run``: a
    trial's program and whatever it started (torch.compile's workers inherit the environment)."""
    from tuner.launchers.local import processes_with

    found = []
    for pid in processes_with(f"GPU_CHECK_RUN={run}".encode()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:  # ended meanwhile
            continue
        found.append(f"{pid}: {command.decode(errors='replace')[:120]}")
    return found


def gpu_contexts() -> list[str]:
    """Processes holding a CUDA context, as nvidia-smi lists them ('pid, name, memory')."""
    code, text = run(
        [
            "nvidia-smi",
            "--query-compute-apps=pid,process_name,used_memory",
            "--format=csv,noheader",
        ],
        timeout=60,
    )
    if code != 0:
        return [f"nvidia-smi failed: {text[-200:]}"]
    return [line.strip() for line in text.splitlines() if line.strip()]


STEPS = {
    "a": check_throughput,
    "b": check_trainer,
    "c": check_packing,
    "d": check_comparison,
    "e": check_early_stopping,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="tiny sizes on the CPU (the tests)")
    parser.add_argument("--compile", action="store_true", help="on the CPU: compile as well")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    parser.add_argument(
        "--steps",
        nargs="+",
        choices=sorted(STEPS),
        default=sorted(STEPS),
        help="run only these steps (default: all), e.g. to split the check over two short runs",
    )
    args = parser.parse_args()
    import torch

    gpu = torch.cuda.is_available() and not args.cpu
    if not gpu and not args.cpu:
        print("no CUDA device: run with --cpu for the CPU variant", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name(0) if gpu else "CPU"
    print(f"gpu_check on {device}, torch {torch.__version__}", flush=True)
    report = Report()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        at = Setting(gpu=gpu, compile=gpu or args.compile, folder=folder)
        for key in sorted(set(args.steps)):
            step = STEPS[key]
            step_began = time.perf_counter()
            try:
                step(report, at)
            except Exception as exc:  # a broken step is a failed check, not a crash
                report.missing(step.__name__, "ran", f"{type(exc).__name__}: {exc}")
            print(f"  {step.__name__} took {time.perf_counter() - step_began:.0f} s", flush=True)
            write_rows(report, args.json)  # after every step: a cut-off run keeps what it took
    report.add("total", "wall seconds", time.perf_counter() - began)
    report.print()
    write_rows(report, args.json)
    return 0 if report.ok else 1


def write_rows(report: Report, path: Path | None) -> None:
    if path is not None:
        path.write_text(json.dumps([r.__dict__ for r in report.rows], indent=1))


if __name__ == "__main__":
    sys.exit(main())
