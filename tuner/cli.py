"""The ``tuner`` command (``tuner --help`` lists its verbs).

Exit codes: 0 success (a tuning job that ended Completed or Stopped), 1 a tuning job that
Failed (for ``compare``/``report``: one of them), a check that found no objective or MLflow
not taking ``tuner track``'s writes, 2 bad
input (the message names rule and value), 130 interrupted. Output cut short by its reader
(``tuner describe X --json | head``) ends quietly with 141, as a shell reports a writer that
SIGPIPE ended (1 would read as a failed tuning job under ``set -o pipefail``). Heavy
libraries (matplotlib, pandas, the strategies' scipy/scikit-optimize/Optuna, uvicorn) are
imported by the verbs that use them.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from tuner import signal_safe
from tuner.analytics import parameter_columns
from tuner.comparison import ComparisonSpec, run_comparison
from tuner.definition import TuningJobDefinition, gpu_id, read_yaml_file
from tuner.env_values import COUNT_RULE, positive_seconds, positive_whole
from tuner.errors import TunerError, ValidationError
from tuner.launchers.host_leases import gpu_pool, holders_text, host_leases
from tuner.launchers.local_limit import LIMIT_ENV, limit_from_env
from tuner.launchers.local_limit import POOL as PLACES
from tuner.launchers.wait_queue import in_line
from tuner.metrics import (
    LogMetricParser,
    MetricDefinition,
    MetricPoint,
    final_objective,
    log_chunks,
)
from tuner.out_folders import make_folder
from tuner.owners import owner_is_gone
from tuner.parameters import argv_word
from tuner.progress import ProgressBar, wanted
from tuner.records import ObjectiveStatus, TrainingJob, TuningStatus
from tuner.scheduler import SIGNALLED, EventHandler
from tuner.storage import Store
from tuner.summary import objective_text
from tuner.tuner import HyperparameterTuner, lease_seconds


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def cmd_run(args: argparse.Namespace) -> int:
    definition = TuningJobDefinition.load(args.config)
    flags = {"name": args.name, "tracking_uri": args.tracking_uri}
    overrides = {key: value for key, value in flags.items() if value is not None}
    if overrides:  # checked as the file's values are
        definition = TuningJobDefinition.parse({**definition.to_json(), **overrides})
    if args.warm_start or args.warm_start_type:
        definition = with_warm_start(definition, args.warm_start, args.warm_start_type)
    tuner = HyperparameterTuner.from_definition(definition, storage=args.storage)
    return _drive(tuner, lambda on_event: tuner.fit(wait=True, on_event=on_event), args)


def with_warm_start(
    definition: TuningJobDefinition, parents: list[str] | None, kind: str | None
) -> TuningJobDefinition:
    """The definition with ``--warm-start`` parents (replacing the file's) and
    ``--warm-start-type`` (default: the file's, else IdenticalDataAndAlgorithm), re-checked."""
    current = definition.warm_start_config
    if not parents and current is None:
        raise ValidationError(
            f"--warm-start-type needs parents: add --warm-start NAME, got only {kind!r}"
        )
    data = definition.to_json()
    data["warm_start_config"] = {
        "parents": parents or (current.parents if current else []),
        "type": kind or (current.type if current else "IdenticalDataAndAlgorithm"),
    }
    return TuningJobDefinition.parse(data)


def cmd_resume(args: argparse.Namespace) -> int:
    tuner = HyperparameterTuner.attach(args.name, storage=args.storage)
    return _drive(tuner, lambda on_event: tuner.resume(on_event=on_event), args)


def _drive(
    tuner: HyperparameterTuner,
    run: Callable[[EventHandler], object],
    args: argparse.Namespace,
) -> int:
    """Run a tuning job in this process with a progress bar; Ctrl-C or SIGTERM stops it cleanly."""
    definition = tuner.definition
    bar = ProgressBar(
        definition.max_jobs,
        definition.objective_metric_name,
        definition.maximize,
        args.progress,
    )

    stopping: list[int] = []
    grace = definition.job_definition.grace_period

    def on_stop_signal(signum: int, _frame: object) -> None:
        """The first Ctrl-C or SIGTERM (``timeout``, ``docker stop``, Slurm's end of a job):
        stop the running jobs (SIGTERM, SIGKILL after the grace period) and end the tuning job
        as Stopped. Later ones only say so: leaving then would orphan the jobs; once the
        run has ended they are ignored (one while the summary was read killed the process:
        exit 143, not 130)."""
        if ended:
            return
        if stopping:
            signal_safe.say(
                f"tuner: already stopping: running training jobs get up to {grace:g} s "
                "(grace_period) to end, then SIGKILL"
            )
            return
        stopping.append(signum)
        tuner.interrupt()

    ended: list[bool] = []
    previous = take_stop_signals(on_stop_signal)
    try:
        try:
            run(bar)
        finally:
            ended.append(True)
            bar.close()
        return _outcome(tuner)
    finally:  # the handlers of before, once the outcome is read (tuner.entry: exit 130)
        for number, handler in previous.items():
            signal.signal(number, handler)


def counted(count: int, noun: str) -> str:
    """``1 arm``, ``2 arms``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def take_stop_signals(handler: Callable[[int, Any], None]) -> dict[int, Any]:
    """Answer Ctrl-C and SIGTERM with ``handler``, but for one this process was started
    ignoring (a shell script's background job ignores SIGINT, so that a Ctrl-C meant for the
    foreground job does not stop it); returns the handlers before, to put back."""
    numbers = (signal.SIGINT, signal.SIGTERM)
    return {n: signal.signal(n, handler) for n in numbers if signal.getsignal(n) != signal.SIG_IGN}


def _outcome(tuner: HyperparameterTuner) -> int:
    """The exit code of a run that has ended, with what it says of it (summary or reason)."""
    if tuner.describe()["status_reason"] == SIGNALLED:
        print(
            "tuner: interrupted; running training jobs were stopped; `tuner resume "
            f"{tuner.name}` continues it",
            file=sys.stderr,
        )
        return 130
    print(summary(tuner))
    status = tuner.describe()["status"]
    if status == TuningStatus.IN_PROGRESS.value:  # its lease was lost: another process runs it
        print(
            f"tuner: tuning job {tuner.name!r} was taken over by another process (this one "
            "stalled past its lease) and runs on there; follow it with tuner describe",
            file=sys.stderr,
        )
        return 3
    return 1 if status == TuningStatus.FAILED.value else 0


def _cell(value: object) -> str:
    """A table cell: floats to 6 significant digits; text with control characters escaped
    (a categorical value can hold an escape sequence for the terminal, or a line break that
    split the row)."""
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    return text if text.isprintable() else repr(text)[1:-1]


def _value_cell(value: object, categorical: bool) -> str:
    """A hyperparameter's cell: a categorical value as the training command got it, so that
    choices ``1`` and ``1.0`` are told apart (to 6 digits, both read 1); others as ``_cell``."""
    return _cell(argv_word(value) if categorical and value is not None else value)


def summary(tuner: HyperparameterTuner, top: int = 5) -> str:
    """Status, reason, counters and the best ``top`` training jobs as text."""
    d = tuner.describe()
    lines = [
        f"Tuning job {d['name']}: {d['status']}"
        + (f" ({d['status_reason']})" if d["status_reason"] else ""),
        f"  strategy {d['strategy']}, objective {d['objective']['type']} "
        f"{d['objective']['metric']}",
        "  training jobs: "
        + (
            ", ".join(f"{k} {v}" for k, v in d["training_job_status_counters"].items() if v)
            or "none"
        ),
    ]
    early, stopped = d.get("early_stopping_type", "Off"), d.get("stopped_early", 0)
    if early != "Off" or stopped:  # Hyperband stops at its rungs with the type Off
        lines.append(
            f"  early stopping: {early if early != 'Off' else d['strategy']}, "
            f"{stopped} stopped early"
        )
    warm = d.get("warm_start")
    if warm:
        taken = ", ".join(f"{p['name']} ({p['used']} of {p['succeeded']})" for p in warm["parents"])
        lines.append(f"  warm start {warm['type']} from {taken}")
    groups = d.get("failure_reasons") or []
    if groups:
        lines.append("  failure reasons:")
        for group in groups:
            lines.append(f"    {group['count']}x {group['reason']}")
            if group["example"] != group["reason"]:
                lines.append(f"       e.g. {group['training_jobs'][0]}: {group['example']}")
    best = d["best_training_job"]
    if best:
        value = objective_text(best["objective"])
        lines.append(f"  best: {best['name']} {d['objective']['metric']}={value}")
        lines.append(f"        {json.dumps(best['hyperparameters'], ensure_ascii=False)}")
    done = [
        j
        for j in tuner.training_jobs()
        if j.objective_status is ObjectiveStatus.SUCCEEDED and j.objective is not None
    ]
    if done and top > 0:
        sign = -1.0 if d["objective"]["type"] == "Maximize" else 1.0
        shown = sorted(done, key=lambda j: (sign * (j.objective or 0.0), j.number))[:top]
        ranges = tuner.definition.hyperparameter_ranges
        names = list(ranges)
        chosen = {n for n, r in ranges.items() if r.get("type") == "categorical"}
        head = [
            "TrainingJobName",
            *(_cell(c) for c in parameter_columns(names)),
            "FinalObjectiveValue",
            "TrainingElapsedTimeSeconds",
        ]
        rows = [
            [
                j.name,
                *(_value_cell(j.hyperparameters.get(n), n in chosen) for n in names),
                objective_text(j.objective),
                _cell(j.duration),
            ]
            for j in shown
        ]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        lines.append(f"  top {len(shown)}:")
        for row in [head, *rows]:
            lines.append(" ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def _print_report(store: Store, names: list[str], folder: str, title: str) -> int:
    """Write the report, print its arm table, each arm's hyperparameter importance, the tuning
    jobs that did not complete and where the report is; 1 when one of the tuning jobs Failed,
    else 0."""
    from tuner.reports import arm_table, build, headline, write_report

    data = build(store, names, importance=True)
    paths = write_report(data, folder, title)
    head, rows = arm_table(data)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    for arm in data["importance"]:
        if arm["importance"]:
            ranked = sorted(arm["importance"].items(), key=lambda item: -item[1])
            shares = ", ".join(f"{name} {share:.0%}" for name, share in ranked)
            print(f"importance (fANOVA), {arm['arm']}: {shares}")
    said = headline(data)
    if said:
        print(said[0])
    failed = False
    for name in names:
        record = store.get_tuning_job(name)
        if record.status is not TuningStatus.COMPLETED:
            reason = f" ({record.status_reason})" if record.status_reason else ""
            print(f"{name}: {record.status.value}{reason}")
        failed |= record.status is TuningStatus.FAILED
    print(f"report: {paths['html'].resolve()}")
    print(f"        {paths['markdown'].resolve()} (with {paths['json'].name}, {paths['csv'].name})")
    return 1 if failed else 0


def add_progress_flags(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress``; neither: a bar only when stderr is a terminal."""
    flags = parser.add_mutually_exclusive_group()
    flags.add_argument(
        "--progress",
        dest="progress",
        action="store_const",
        const=True,
        default=None,
        help="show the progress bar even when stderr is not a terminal",
    )
    flags.add_argument(
        "--no-progress",
        dest="progress",
        action="store_const",
        const=False,
        help="no progress bar",
    )


def cmd_compare(args: argparse.Namespace) -> int:
    spec = ComparisonSpec.load(args.spec)
    definitions = spec.definitions()  # a Grid arm's max_jobs may be its grid's size
    folder = args.report_dir or spec.report_dir or f"tuner-runs/reports/{spec.name}"
    make_folder(folder, "the report")  # refused before the arms run, not after
    runs = len(definitions)
    total = sum(d.max_jobs for d in definitions)
    print(
        f"comparison {spec.name}: {counted(len(spec.arms), 'arm')} x "
        f"{counted(len(spec.seeds), 'seed')} = {counted(runs, 'tuning job')}, at most "
        f"{counted(total, 'training job')}",
        file=sys.stderr,
    )
    from tqdm import tqdm

    bar = tqdm(total=total, unit="job", disable=not wanted(args.progress), file=sys.stderr)

    def on_event(kind: str, job: TrainingJob) -> None:
        if kind == "ended":
            bar.update(1)
            bar.set_postfix_str(job.tuning_job_name)

    stopping: list[int] = []

    def on_stop_signal(signum: int, _frame: object) -> None:
        """The first Ctrl-C or SIGTERM ends the running arm as Ctrl-C ends ``tuner run`` (its
        jobs stopped, the arm Stopped "interrupted"; the next ``tuner compare`` resumes it);
        later ones only say so: leaving then would orphan the jobs."""
        if stopping:
            signal_safe.say("tuner: already stopping the running training jobs")
            return
        stopping.append(signum)
        raise KeyboardInterrupt

    previous = take_stop_signals(on_stop_signal)
    try:
        names = run_comparison(spec, storage=args.storage, on_event=on_event)
    except KeyboardInterrupt:
        print(
            f"tuner: interrupted; running training jobs were stopped; run `tuner compare "
            f"{args.spec}` again to resume",
            file=sys.stderr,
        )
        return 130
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        bar.close()
    return _print_report(Store(args.storage), names, folder, f"Comparison {spec.name}")


def report_folder_name(names: list[str]) -> str:
    """The default folder of a report on ``names``: the one name, or the names joined by
    ``+`` (a comparison no longer overwrites its first job's own report); past 120 characters
    the first name, how many more, and a digest of them all."""
    joined = "+".join(names)
    if len(joined) <= 120:
        return joined
    digest = hashlib.sha256(joined.encode()).hexdigest()[:10]
    return f"{names[0]}+{len(names) - 1}-more-{digest}"


def cmd_report(args: argparse.Namespace) -> int:
    folder = args.out or f"tuner-runs/reports/{report_folder_name(args.names)}"
    store = Store(args.storage, create=False)
    return _print_report(store, args.names, folder, args.title or "Tuning report")


def cmd_list(args: argparse.Namespace) -> int:
    store = Store(args.storage, create=False)
    jobs = store.list_tuning_jobs(TuningStatus(args.status) if args.status else None)
    print(f"{'NAME':40} {'STATUS':11} {'STRATEGY':9} {'JOBS':>5} CREATED (UTC)")
    for job in jobs:
        count = store.count_training_jobs(job.name)
        strategy = job.definition.get("strategy", "?")
        print(
            f"{job.name:40} {job.status.value:11} {strategy:9} {count:>5} {_when(job.created_at)}"
        )
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    tuner = HyperparameterTuner.attach(args.name, storage=args.storage)
    if args.json:
        print(json.dumps(tuner.describe(), indent=2, default=str))
    else:
        print(summary(tuner, top=args.top))
    return 0


def cmd_gpus(args: argparse.Namespace) -> int:
    """Every GPU with leases on this machine: the share held and by which training jobs; and
    the local job places held under ``TUNER_MAX_LOCAL_JOBS`` (when no ids are asked for)."""
    try:
        ids = [str(gpu_id(gpu)) for gpu in args.ids]
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    leases = host_leases()
    held, places, waiting = {}, [], {}
    if leases.root.exists():  # a reading verb makes no directory
        with leases.locked():
            held = {gpu: leases.holders(gpu_pool(gpu)) for gpu in ids or leases.gpus()}
            places = [] if ids else leases.holders(PLACES)
            pools = [gpu_pool(gpu) for gpu in held] + ([] if ids else [PLACES])
            waiting = {pool: in_line(leases, pool) for pool in pools}
    print(f"GPU leases in {leases.root} (every tuner process of this user on this machine)")
    for gpu, holders in held.items():
        total = sum(share for share, _ in holders)
        print(f"  GPU {gpu}: {f'{total:.3g} held by ' if holders else ''}{holders_text(holders)}")
        print_line(waiting.get(gpu_pool(gpu), []))
    if not held:
        print("  none: no tuner process here has leased a GPU")
    if places or waiting.get(PLACES):
        total = sum(share for share, _ in places)
        print(f"Local job places ({LIMIT_ENV}): {total:.3g} held by {holders_text(places)}")
        print_line(waiting[PLACES])
    return 0


def print_line(waiters: Sequence[tuple[float, int]]) -> None:
    """The tuner processes waiting for room in one pool, first in line first."""
    if waiters:
        now = time.time()
        text = ", ".join(f"process {pid} for {now - since:.0f} s" for since, pid in waiters)
        print(f"    waiting, first in line first: {text}")


def cmd_stop(args: argparse.Namespace) -> int:
    """Ask for the stop, then (unless ``--no-wait``) wait until the tuning job has ended. Its
    process stops it; when no process holds it (its ``tuner run`` was killed, its lease ran
    out) this one takes it over as ``resume`` does, so its training jobs are stopped too."""
    store = Store(args.storage, create=False)
    record = store.request_stop(args.name)
    orphaned = owner_is_gone(record.owner)  # taken over at once, no lease to wait out
    if args.wait and not record.status.terminal and record.lease_expires and not orphaned:
        until = datetime.fromtimestamp(record.lease_expires, UTC).strftime("%H:%M:%S UTC")
        print(
            f"tuner stop: waiting for {record.name} to end: its process stops it, or, if that "
            f"process is gone, this one takes it over when its lease expires ({until})",
            file=sys.stderr,
        )
    if args.wait and not record.status.terminal:  # wait() takes it over once orphaned
        try:
            HyperparameterTuner.attach(args.name, storage=args.storage).wait()
        except KeyboardInterrupt:
            print(
                f"tuner stop: interrupted while waiting; the stop of {record.name} stands: "
                f"its process stops it (`tuner stop {record.name}` again waits, and takes it "
                "over if that process is gone)",
                file=sys.stderr,
            )
            return 130
        record = store.get_tuning_job(args.name)
    print(f"{record.name}: {record.status.value}")
    return 0


def cmd_track(args: argparse.Namespace) -> int:
    from tuner.tracking import catch_up

    tuner = HyperparameterTuner.attach(args.name, storage=args.storage)
    uri = args.tracking_uri or tuner.definition.tracking_uri
    try:
        catch_up(tuner.definition, args.name, tuner.store, args.tracking_uri)
    except TunerError:
        raise
    except Exception as exc:  # MLflow's: the server is still away, or refused
        print(
            f"tuner track: MLflow at {uri} did not take {args.name} "
            f"({type(exc).__name__}: {str(exc)[:300]}); nothing was lost, try again later",
            file=sys.stderr,
        )
        return 1
    print(f"{args.name}: written to MLflow at {uri}")
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    from tuner.fidelity import MIN_JOBS  # here: it imports SciPy, which start-up does without

    tuner = HyperparameterTuner.attach(args.name, storage=args.storage)
    found = tuner.step_agreement(args.eta)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    eta = found["eta"]
    print(
        f"{args.name}: {found['completed_jobs']} completed jobs; how each step of "
        f"{tuner.definition.objective_metric_name} ranks them as their final objective does"
    )
    print(f"{'STEP':>5} {'JOBS':>5} {'SPEARMAN':>9} {f'BEST TENTH KEPT BY A 1/{eta} CUT':>28}")
    for row in found["steps"]:
        # three decimals: 0.6492 shown as 0.65 looked like it met the 0.65 rule it misses
        rho = "-" if row["spearman"] is None else f"{row['spearman']:.3f}"
        kept = "-" if row["best_kept"] is None else f"{row['best_kept']:.3f}"
        print(f"{row['step']:>5} {row['jobs']:>5} {rho:>9} {kept:>28}")
    suggestion = found["suggested_min_resource"]
    if suggestion is None and found["completed_jobs"] < MIN_JOBS:
        print(
            f"too few completed jobs to tell: {found['completed_jobs']}, at least {MIN_JOBS} "
            f"are needed ({found['rule']})"
        )
    elif suggestion is None:
        print(
            f"no step qualifies ({found['rule']}): early stopping would mostly stop the "
            "jobs that end best; more completed jobs may tell more"
        )
    else:
        print(f"suggested min_resource: {suggestion} ({found['rule']})")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    tuner = HyperparameterTuner.attach(args.name, storage=args.storage)
    analytics = tuner.analytics()
    if args.csv == "-":  # standard output, as `-` means to most tools
        sys.stdout.write(analytics.csv_text())
    else:
        print(analytics.export_csv(args.csv))
    return 0


SLOW_REGEX_SECONDS_PER_MB = 1.0


def _read_log(
    log: str, metrics: list[MetricDefinition]
) -> tuple[list[MetricPoint], LogMetricParser, int, dict[str, float]]:
    """A log read once, in pieces: its metric points, the parser (lines, captures that are not
    numbers), its size, and the seconds each metric's regex alone took over it (RE2: linear
    in the log's size). Raises OSError where it cannot be read."""
    parser = LogMetricParser(metrics)
    alone = {m.name: LogMetricParser([m]) for m in metrics}
    seconds = dict.fromkeys(alone, 0.0)
    points: list[MetricPoint] = []
    size = 0
    for chunk in itertools.chain(log_chunks(log), [b""]):  # b"": each parser's close
        size += len(chunk)
        points.extend(parser.feed(chunk) if chunk else parser.close())
        for name, single in alone.items():
            started = time.perf_counter()
            single.feed(chunk) if chunk else single.close()
            seconds[name] += time.perf_counter() - started
    return points, parser, size, seconds


def metrics_definition(path: str) -> TuningJobDefinition:
    """The tuning job definition in ``path``, or a comparison spec's first run (every arm of a
    comparison shares its metric definitions and objective)."""
    document = read_yaml_file(path, "tuning job definition or comparison spec")
    if isinstance(document, dict) and "arms" in document:
        return ComparisonSpec.parse(document).definitions()[0]
    return TuningJobDefinition.parse(document)


def cmd_check_metrics(args: argparse.Namespace) -> int:
    definition = metrics_definition(args.config)
    try:
        points, parser, size, regex_seconds = _read_log(args.log, definition.metrics())
    except OSError as exc:
        raise TunerError(f"cannot read log {args.log}: {exc}") from None
    print(f"{args.log}: {parser.lines} lines, {len(points)} metric values")
    found_objective = False
    for metric in definition.metrics():
        seconds = regex_seconds[metric.name]
        if seconds > args.slow_per_mb * max(1.0, size / 1e6):
            print(
                f"  {metric.name}: regex {metric.regex!r} is slow: {seconds:.2f} s for this log "
                f"(more than {args.slow_per_mb:g} s per MB); simplify it"
            )
        values = [p.value for p in points if p.name == metric.name]
        marker = " (objective)" if metric.name == definition.objective_metric_name else ""
        if not values:
            if metric.name in parser.last_unparsed:
                print(
                    f"  {metric.name}{marker}: matched, but never captured a number (the last "
                    f"capture: {parser.last_unparsed[metric.name]!r}; below)"
                )
            else:
                print(
                    f"  {metric.name}{marker}: no match for {metric.regex!r}"
                    + parser.cut_note(metric.name)
                )
            continue
        finite = [v for v in values if math.isfinite(v)]
        shown = ", ".join(f"{v:g}" for v in values[:3]) + (" ..." if len(values) > 3 else "")
        print(
            f"  {metric.name}{marker}: {len(values)} values [{shown}] last={values[-1]:g}"
            + (f" min={min(finite):g} max={max(finite):g}" if finite else "")
            + (f" ({len(values) - len(finite)} not finite)" if len(finite) < len(values) else "")
            + parser.cut_note(metric.name)
        )
        if marker:
            found_objective = True
    for miss in parser.unparsed[:10]:
        print(f"  {miss.name}: captured {miss.text!r}, not a number, in line {miss.line[:120]!r}")
    if parser.unparsed_count > 10:
        print(f"  ... {parser.unparsed_count - 10} more captures that are not numbers")
    if found_objective:
        value = final_objective(
            points, definition.objective_metric_name, definition.aggregation, definition.maximize
        )
        print(
            f"objective {definition.objective_metric_name} "
            f"({definition.objective_aggregation}) = {value:g}"
        )
        if value is not None and math.isfinite(value):
            return 0
        print(f"a training job with this log would fail: its objective is {value}")
        return 1
    print(
        f"objective {definition.objective_metric_name!r} was not found: "
        "a training job with this log would fail"
    )
    return 1


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the REST service (needs the ``service`` extra). Settings travel by environment."""
    import secrets

    from tuner.env_values import count_from_env
    from tuner.extras import require
    from tuner.service import in_memory, workers_from_env
    from tuner.storage import default_url

    uvicorn = require("uvicorn", "service", "tuner serve")
    require("fastapi", "service", "tuner serve")
    from api.settings import token_from_env

    if args.storage:
        os.environ["TUNER_DATABASE_URL"] = args.storage
    os.environ["TUNER_RUNS_DIR"] = args.runs_dir
    if args.allow_program:
        os.environ["TUNER_ALLOWED_PROGRAMS"] = os.pathsep.join(args.allow_program)
    if args.allow_image:
        os.environ["TUNER_ALLOWED_IMAGES"] = " ".join(args.allow_image)  # tags hold ':'
    if args.allow_docker_host:
        os.environ["TUNER_ALLOWED_DOCKER_HOSTS"] = " ".join(args.allow_docker_host)
    if args.lease_seconds is not None:
        os.environ["TUNER_LEASE_SECONDS"] = str(args.lease_seconds)
    if args.workers is not None:
        os.environ["TUNER_WORKERS"] = args.workers
    if args.max_running_tuning_jobs is not None:
        os.environ["TUNER_MAX_RUNNING_TUNING_JOBS"] = str(args.max_running_tuning_jobs)
    if args.max_parallel_jobs is not None:
        os.environ["TUNER_MAX_PARALLEL_JOBS"] = str(args.max_parallel_jobs)
    if args.max_local_jobs is not None:
        os.environ[LIMIT_ENV] = str(args.max_local_jobs)
    lease_seconds()  # a bad TUNER_LEASE_SECONDS is refused here, not in the server's start-up
    workers_from_env()
    count_from_env("TUNER_MAX_RUNNING_TUNING_JOBS", 1)  # the same for these
    count_from_env("TUNER_MAX_PARALLEL_JOBS", 1)
    limit_from_env()
    if in_memory(default_url()):  # its requests and its tuning jobs would see two databases
        raise ValidationError(
            "tuner serve needs a database file or server (--storage, TUNER_DATABASE_URL), "
            f"not an in-memory SQLite database; got {default_url()!r}"
        )
    if token_from_env() is None:
        os.environ["TUNER_API_TOKEN"] = secrets.token_urlsafe(24)
        print(f"TUNER_API_TOKEN={os.environ['TUNER_API_TOKEN']}", file=sys.stderr, flush=True)
    uvicorn.run(
        "api.app:create_app", factory=True, host=args.host, port=args.port, log_level=args.log_level
    )
    return 0


DESCRIPTION = (
    "Hyperparameter tuning of training commands whose metrics are read from their logs: run "
    "and resume tuning jobs, compare strategies, inspect and export the results, check metric "
    "regexes on a sample log, serve the REST API."
)
EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE: the reader of the output left

EPILOG = (
    "Exit codes: 0 success, 1 a tuning job failed (or check-metrics found no objective, or "
    "MLflow did not take tuner track's writes), 2 bad input, 130 interrupted, 141 output cut "
    "short by its reader."
)


def port_number(text: str) -> int:
    """argparse type: a TCP port, 0-65535 (0: any free one)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 5 or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"a port is a whole number 0-65535; got {text!r}")
    return int(text)


def count(text: str) -> int:
    """argparse type: a whole number >= 0 (of at most 18 digits)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0; got {text!r}")
    return int(text)


def positive_count(text: str) -> int:
    """argparse type: a whole number from 1 to ``env_values.MOST``."""
    value = positive_whole(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be {COUNT_RULE}; got {text!r}")
    return value


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    value = positive_seconds(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0; got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="tuner", description=DESCRIPTION, epilog=EPILOG)
    storage_help = "SQLAlchemy URL (default $TUNER_DATABASE_URL or sqlite:///tuner-runs/tuner.db)"
    root.add_argument("--storage", help=storage_help)
    sub = root.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a tuning job from a YAML definition")
    run.add_argument("config", help="tuning job definition (YAML)")
    run.add_argument("--name", help="name of the tuning job (default: generated)")
    add_progress_flags(run)
    run.add_argument(
        "--tracking-uri", help="MLflow tracking URI (overrides the definition's tracking_uri)"
    )
    run.add_argument(
        "--warm-start",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="parent tuning jobs to start from (up to 5: --warm-start A B, or the flag repeated; "
        "replaces the file's)",
    )
    run.add_argument(
        "--warm-start-type",
        metavar="TYPE",
        help="IdenticalDataAndAlgorithm (default) or TransferLearning",
    )
    run.set_defaults(func=cmd_run)

    ls = sub.add_parser("list", help="list tuning jobs, newest first")
    ls.add_argument("--status", choices=[s.value for s in TuningStatus])
    ls.set_defaults(func=cmd_list)

    describe = sub.add_parser("describe", help="status, counters and best job of a tuning job")
    describe.add_argument("name")
    describe.add_argument("--json", action="store_true")
    describe.add_argument(
        "--top",
        type=count,
        default=5,
        help="how many of the best training jobs to list (default 5; refused below 0)",
    )
    describe.set_defaults(func=cmd_describe)

    resume = sub.add_parser(
        "resume", help="continue a tuning job whose process died (re-attaches to its jobs)"
    )
    resume.add_argument("name")
    add_progress_flags(resume)
    resume.set_defaults(func=cmd_resume)

    gpus = sub.add_parser(
        "gpus", help="which training jobs hold which share of each GPU on this machine"
    )
    gpus.add_argument("ids", nargs="*", help="GPU ids to show (default: every one with leases)")
    gpus.set_defaults(func=cmd_gpus)

    stop = sub.add_parser(
        "stop",
        help="stop a running tuning job (from any process) and wait until it has ended; one "
        "whose process died is taken over (as resume) once its lease expires, and stopped",
    )
    stop.add_argument("name")
    stop.add_argument(
        "--no-wait",
        dest="wait",
        action="store_false",
        help="only ask for the stop (prints Stopping); the process running it stops it",
    )
    stop.set_defaults(func=cmd_stop)

    track = sub.add_parser(
        "track",
        help="write an ended tuning job to MLflow from the store (what its tracking server "
        "missed while it was away)",
    )
    track.add_argument("name")
    track.add_argument("--tracking-uri", help="another MLflow tracking URI than the job's own")
    track.set_defaults(func=cmd_track)

    fidelity = sub.add_parser(
        "fidelity",
        help="how well each step of the objective ranks completed jobs as they end, and the "
        "min_resource for Hyperband or ASHA that suggests",
    )
    fidelity.add_argument("name")
    fidelity.add_argument("--eta", type=int, default=3, help="the cut keeps 1/eta (default 3)")
    fidelity.add_argument("--json", action="store_true")
    fidelity.set_defaults(func=cmd_fidelity)

    export = sub.add_parser("export", help="write one CSV row per training job")
    export.add_argument("name")
    export.add_argument("--csv", required=True, help="output file (- for standard output)")
    export.set_defaults(func=cmd_export)

    serve = sub.add_parser("serve", help="run the REST service (token: $TUNER_API_TOKEN)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port_number, default=8000)
    serve.add_argument("--runs-dir", default="tuner-runs", help="training jobs' folders")
    serve.add_argument(
        "--allow-program",
        action="append",
        default=[],
        help="a program job definitions may run (repeat; default: any)",
    )
    serve.add_argument(
        "--allow-image",
        action="append",
        default=[],
        help="an image job definitions may run (repeat; default: any, none with --allow-program)",
    )
    serve.add_argument(
        "--allow-docker-host",
        action="append",
        default=[],
        help="a Docker engine (docker_host) job definitions may use (repeat; default: none)",
    )
    serve.add_argument("--lease-seconds", type=seconds, help="tuning-job lease (default 30)")
    serve.add_argument(
        "--workers",
        choices=["process", "thread"],
        help="run each tuning job in a worker process (default) or a thread of the service",
    )
    serve.add_argument(
        "--max-running-tuning-jobs",
        type=positive_count,
        help="the most tuning jobs run at once; more wait for a place (default 16)",
    )
    serve.add_argument(
        "--max-parallel-jobs",
        type=positive_count,
        help="the most max_parallel_jobs a definition may ask for; more is refused (default 100)",
    )
    serve.add_argument(
        "--max-local-jobs",
        type=positive_count,
        help="the most local training jobs run at once on this machine, by this service and "
        "every other tuner process; more wait for a place (default: no limit)",
    )
    levels = ["critical", "error", "warning", "info", "debug", "trace"]
    serve.add_argument("--log-level", default="info", choices=levels)
    serve.set_defaults(func=cmd_serve)

    compare = sub.add_parser(
        "compare", help="run a strategy comparison (arms x seeds) and write its report"
    )
    compare.add_argument("spec", help="comparison spec (YAML)")
    compare.add_argument("--report-dir", help="where the report goes")
    add_progress_flags(compare)
    compare.set_defaults(func=cmd_compare)

    rep = sub.add_parser("report", help="compare tuning jobs that exist (HTML, Markdown, JSON)")
    rep.add_argument("names", nargs="+", help="tuning job names")
    rep.add_argument(
        "--out", help="folder of the report (default tuner-runs/reports/NAME or NAME+NAME...)"
    )
    rep.add_argument("--title")
    rep.set_defaults(func=cmd_report)

    check = sub.add_parser(
        "check-metrics", help="show what the metric definitions extract from a sample log"
    )
    check.add_argument("--log", required=True, help="a log file of the training command")
    check.add_argument(
        "--config", required=True, help="tuning job definition or comparison spec (YAML)"
    )
    check.add_argument(
        "--slow-per-mb",
        type=seconds,
        default=SLOW_REGEX_SECONDS_PER_MB,
        metavar="SECONDS",
        help=f"flag a regex slower than this per MB of log (default {SLOW_REGEX_SECONDS_PER_MB})",
    )
    check.set_defaults(func=cmd_check_metrics)
    for command in sub.choices.values():  # also after the command: `tuner list --storage URL`
        command.add_argument("--storage", default=argparse.SUPPRESS, help=storage_help)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a locale without a character of a name or value
        if hasattr(stream, "reconfigure"):  # (LC_ALL=C, UTF-8 mode off) shows it escaped
            stream.reconfigure(errors="backslashreplace")
    args = parser().parse_args(argv)
    try:
        result: Any = args.func(args)
        sys.stdout.flush()
        return int(result)
    except BrokenPipeError:
        # The reader left (``| head``): no traceback; stdout goes to devnull so that the
        # interpreter's own flush at exit cannot fail again (Python's documented recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except TunerError as exc:
        print(f"tuner: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # run, resume and compare say what became of their jobs
        print("tuner: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
