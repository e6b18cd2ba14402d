"""Rendering a comparison report: PNG plots (matplotlib), HTML, Markdown, JSON and CSV.

``write_report(data, folder)`` writes ``report.html`` (self-contained: plots embedded as PNG
data, no network needed to open it), ``report.md`` (tables, linking the PNG files written
beside it), ``report.json`` (the data), ``training_jobs.csv`` (every training job with its
tuning job, arm and seed, then the columns of ``tuner export``) and the plots as
``best_by_jobs.png``, ``best_by_time.png``, ``objective_vs_hyperparameters.png``.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from tuner.analytics import CSV_TIME_FORMAT
from tuner.errors import TunerError
from tuner.out_folders import make_folder, why
from tuner.reports.data import number
from tuner.summary import objective_text

COLOURS = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if math.isfinite(value) else str(value)
    return str(value)


PLOT_LIMIT = 1e300  # finite values beyond +-this are drawn at it


def drawable(values: np.ndarray) -> np.ndarray:
    """Finite values held within +-``PLOT_LIMIT``: matplotlib cannot place ticks on an axis
    reaching 1e308 (a diverged loss of 1.7e308 made every report of its run fail)."""
    return np.where(np.isfinite(values), np.clip(values, -PLOT_LIMIT, PLOT_LIMIT), values)


def best_band(curves: list[list[float | None]], maximize: bool) -> tuple[np.ndarray, ...] | None:
    """Median, min and max across runs of best-so-far curves padded with their last value.

    The median counts a run without a value yet (or ever) as worse than any value, as the
    arm table's median does (``tuner.reports.data.median_best``), and is NaN where it falls on
    such a run. The band leaves out runs without any value, and every column before the first
    one where all the remaining runs have a value is NaN: each run's curve is monotone, so the
    median and the band are monotone too (a run joining late cannot pull them back). None when
    no run has a value."""
    rows = [[np.nan if v is None else v for v in c] for c in curves]
    valued = [r for r in rows if any(not math.isnan(v) for v in r)]
    if not valued:
        return None
    length = max(len(r) for r in rows)

    def padded(group: list[list[float]]) -> np.ndarray:
        return drawable(
            np.array([r + [r[-1] if r else np.nan] * (length - len(r)) for r in group], float)
        )

    everyone = padded(rows)
    ranked = np.where(np.isnan(everyone), -np.inf if maximize else np.inf, everyone)
    median = np.median(ranked, 0)
    median[~np.isfinite(median)] = np.nan
    a = padded(valued)
    complete = ~np.isnan(a).any(axis=0)
    a[:, : int(np.argmax(complete)) if complete.any() else length] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # columns before every run has a value
        return median, np.nanmin(a, 0), np.nanmax(a, 0)


def zoom(bands: list[tuple[np.ndarray, ...]], maximize: bool) -> tuple[float, float] | None:
    """Y limits that show the differences the report is about: the best value, the worst final
    value of any run, and three times that spread below it (above it when minimising) for the
    climb, never beyond the values drawn; infinite values are left out (None when no finite
    value is left)."""
    finals = [v for _, low, high in bands for v in (low[-1], high[-1]) if math.isfinite(v)]
    drawn = [v for band in bands for arr in band for v in arr if math.isfinite(v)]
    if not finals:
        return None
    best = max(finals) if maximize else min(finals)
    worst = min(finals) if maximize else max(finals)
    spread = abs(best - worst) or max(abs(best) * 0.01, 1e-3)
    if maximize:
        return max(min(drawn), worst - 3 * spread), best + 0.5 * spread
    return best - 0.5 * spread, min(max(drawn), worst + 3 * spread)


LEGEND_CHARS = 40  # an arm's name in a plot's legend is cut to this (tables keep it whole)


def _legend(arm: str) -> str:
    return arm if len(arm) <= LEGEND_CHARS else arm[: LEGEND_CHARS - 1] + "…"


def _no_result(ax: plt.Axes, text: str = "no training job succeeded") -> None:
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        transform=ax.transAxes,
        color="#d62728",
    )


def plot_best_by_jobs(data: dict[str, Any]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 4))
    bands = []
    maximize = data["objective"]["type"] == "Maximize"
    for i, (arm, runs) in enumerate(data["curves"].items()):
        band = best_band([[p["best"] for p in run] for run in runs], maximize)
        if band is None:
            continue
        bands.append(band)
        median, low, high = band
        x = np.arange(1, len(median) + 1)
        label = f"{_legend(arm)} ({len(runs)} run{'s' if len(runs) > 1 else ''})"
        ax.step(x, median, where="post", color=COLOURS[i % 10], label=label)
        if len(runs) > 1:
            ax.fill_between(x, low, high, step="post", alpha=0.2, color=COLOURS[i % 10])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # jobs: 1, 2, 3, not 1.5
    _finish_best_plot(ax, data, bands, "training jobs ended", "by jobs")
    fig.tight_layout()
    return fig


def _finish_best_plot(
    ax: plt.Axes, data: dict[str, Any], bands: list[tuple[np.ndarray, ...]], x: str, by: str
) -> None:
    ax.set_xlabel(x)
    ax.set_ylabel(f"best {data['objective']['metric']} so far")
    ax.set_title(f"Best objective so far, {by} (median, band: min-max over seeds)")
    ax.grid(alpha=0.3)
    limits = zoom(bands, data["objective"]["type"] == "Maximize")
    if limits is None:
        _no_result(ax, "no finite objective to plot" if bands else "no training job succeeded")
        return
    ax.set_ylim(*limits)
    ax.legend()


def _plot_best_by(data: dict[str, Any], key: str, xlabel: str, title: str) -> plt.Figure:
    """Best so far against ``key`` of each curve point (median line, min-max band)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    bands = []
    maximize = data["objective"]["type"] == "Maximize"
    for i, (arm, runs) in enumerate(data["curves"].items()):
        if not any(runs):
            continue
        end = max(r[-1][key] for r in runs if r)
        grid = np.linspace(0, end, 200)
        sampled: list[list[float | None]] = []
        for run in runs:  # a run that ended no job counts in the median (as no value)
            xs = np.array([p[key] for p in run])
            values = [p["best"] for p in run]
            idx = np.searchsorted(xs, grid, side="right") - 1
            sampled.append([values[k] if k >= 0 else None for k in idx])
        band = best_band(sampled, maximize)
        if band is None:
            continue
        bands.append(band)
        median, low, high = band
        ax.plot(grid, median, color=COLOURS[i % 10], label=_legend(arm))
        if len(runs) > 1:
            ax.fill_between(grid, low, high, alpha=0.2, color=COLOURS[i % 10])
    _finish_best_plot(ax, data, bands, xlabel, title)
    fig.tight_layout()
    return fig


def plot_best_by_time(data: dict[str, Any]) -> plt.Figure:
    return _plot_best_by(
        data, "seconds", "seconds the tuning job ran (interruptions left out)", "by time"
    )


def plot_best_by_compute(data: dict[str, Any]) -> plt.Figure:
    """Best so far against training-seconds used (GPU-seconds counted by each job's share)."""
    return _plot_best_by(
        data,
        "compute_seconds",
        "compute used: training-seconds (GPU-seconds with GPUs)",
        "by compute",
    )


MAX_CATEGORY_TICKS = 40  # more categories than this are plotted unlabelled


def _categories(values: list[str], points: list[dict[str, Any]], name: str) -> list[str]:
    """The categories to plot: the range's, then values it does not list (merged runs); of a
    range longer than ``MAX_CATEGORY_TICKS``, only those some completed job used (20,000
    categories made a report take 45 s and 650 MB)."""
    used = dict.fromkeys(
        str(x) for p in points if (x := p["hyperparameters"].get(name)) is not None
    )
    listed = set(values)
    unlisted = [v for v in used if v not in listed]
    if len(values) > MAX_CATEGORY_TICKS:
        return [v for v in values if v in used] + unlisted
    return values + unlisted


def plot_objective_vs_hyperparameters(data: dict[str, Any]) -> plt.Figure:
    ranges = data["hyperparameter_ranges"]
    names = list(ranges)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    arms = list(data["curves"])
    for k, name in enumerate(names):
        ax = axes[k // cols][k % cols]
        spec = ranges[name]
        if spec["type"] == "categorical":
            values = _categories([str(v) for v in spec["values"]], data["points"], name)
            where = {v: k for k, v in enumerate(values)}
            labelled = len(values) <= MAX_CATEGORY_TICKS
            ax.set_xticks(range(len(values)) if labelled else [], values if labelled else [])
        for i, arm in enumerate(arms):
            # jobs of a run that did not use it are left out; a value no range lists (merged
            # runs) gets a category of its own; a numeric range plots numbers only
            pts = [
                p
                for p in data["points"]
                if p["arm"] == arm
                and (x := p["hyperparameters"].get(name)) is not None
                and (spec["type"] == "categorical" or number(x) is not None)
            ]
            ys = drawable(np.array([p["objective"] for p in pts], dtype=float))
            if spec["type"] == "categorical":
                shown = [str(p["hyperparameters"][name]) for p in pts]
                xs = [where[x] + (i - len(arms) / 2) * 0.08 for x in shown]
            else:
                xs = [float(p["hyperparameters"][name]) for p in pts]
            if pts:
                ax.scatter(xs, ys, s=14, alpha=0.7, color=COLOURS[i % 10], label=arm)
        if not data["points"]:
            _no_result(ax)
        elif spec.get("scaling_type") == "Logarithmic":  # only with data: empty axes cannot
            ax.set_xscale("log")
        ax.set_xlabel(name + (" (log)" if spec.get("scaling_type") == "Logarithmic" else ""))
        ax.set_ylabel(data["objective"]["metric"])
        ax.grid(alpha=0.3)
    for k in range(len(names), rows * cols):
        axes[k // cols][k % cols].axis("off")
    if data["points"]:
        axes[0][0].legend(fontsize=8)
    fig.suptitle("Objective of every completed job against each hyperparameter")
    fig.tight_layout()
    return fig


PLOTS = {
    "best_by_jobs.png": plot_best_by_jobs,
    "best_by_time.png": plot_best_by_time,
    "best_by_compute.png": plot_best_by_compute,
    "objective_vs_hyperparameters.png": plot_objective_vs_hyperparameters,
}


def arm_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The arm table; compute in its column's unit, or each cell in its own when GPU and CPU
    arms meet (the column took the first arm's unit for every arm)."""
    units = {a["compute_unit"] for a in data["arms"]}
    unit = units.pop() if len(units) == 1 else "compute"
    head = [
        "arm",
        "strategy",
        "jobs (parallel)",
        "runs",
        "best (median)",
        "best (overall)",
        "jobs to best",
        "seconds to best",
        "wall seconds",
        unit,
        "failed",
        "stopped",
        "stopped early",
        "compute saved",
    ]
    queues = any(a.get("queued_hours", 0.0) * 3600 >= 1.0 for a in data["arms"])
    if queues:  # jobs waited in a cluster's queue: show that time apart from training
        head.insert(head.index(unit) + 1, "queued hours")
    rows = [
        [
            a["arm"],
            str(a["strategy"]),
            f"{a['max_jobs']} ({a['max_parallel_jobs']})",
            _runs(a),
            objective_text(a["best_median"]),
            objective_text(a["best_overall"]),
            _fmt(a["jobs_to_best_median"], 3),
            _fmt(a["seconds_to_best_median"], 3),
            _fmt(a["wall_seconds_median"], 3),
            _fmt(a["compute_hours"], 3) + ("" if unit != "compute" else f" {a['compute_unit']}"),
            *([_fmt(a.get("queued_hours", 0.0), 3)] if queues else []),
            str(a["failed"]),
            str(a["stopped"]),
            str(a.get("stopped_early", 0)),
            _saved(a),
        ]
        for a in data["arms"]
    ]
    return head, rows


def _runs(arm: dict[str, Any]) -> str:
    """``3``, or ``3 (1 without a result)``: such a run counts as the worst in the median."""
    missing = arm.get("runs_without_result", 0)
    return f"{len(arm['runs'])}" + (f" ({missing} without a result)" if missing else "")


def _saved(arm: dict[str, Any]) -> str:
    """``64% vs random`` for an arm that stops jobs early, ``-`` otherwise."""
    if arm.get("compute_saved") is None:
        return "-"
    return f"{arm['compute_saved']:.0%} vs {arm['compute_reference']}"


def reach_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    arms = [a["arm"] for a in data["arms"]]
    head = ["jobs needed by \\ to reach the median best of", *arms]
    rows = []
    for arm in arms:
        cells = [arm]
        for other in arms:
            r = data["reach"].get(arm, {}).get(other)
            if other == arm or r is None:
                cells.append("-")
            elif r["jobs_median"] is None:
                cells.append(f"never ({objective_text(r['target'])})")
            else:
                cells.append(f"{_fmt(r['jobs_median'], 3)} ({r['runs_reaching']}/{r['runs']} runs)")
        rows.append(cells)
    return head, rows


def top_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    names = list(data["hyperparameter_ranges"])
    uploaded = any(t.get("artifacts_uri") for t in data["top"])
    head = ["#", "arm", "training job", data["objective"]["metric"], *names]
    head += ["artifacts"] if uploaded else []
    rows = [
        [
            str(i),
            t["arm"],
            t["training_job"],
            objective_text(t["objective"]),
            *(_fmt(t["hyperparameters"].get(n)) for n in names),
            *([t.get("artifacts_uri") or "-"] if uploaded else []),
        ]
        for i, t in enumerate(data["top"], start=1)
    ]
    return head, rows


def importance_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Each arm's share of the objective's variation per hyperparameter (``-``: not tuned by
    that arm, or no figures, with the reason in the last column)."""
    names = list(data["hyperparameter_ranges"])
    head = ["arm", "completed jobs used", *names, "note"]
    rows = []
    for row in data.get("importance", []):
        shares = row["importance"] or {}
        used = str(row["jobs"]) if row["jobs"] == row["of"] else f"{row['jobs']} of {row['of']}"
        note = row["why"] or ("a seeded random sample" if row["jobs"] < row["of"] else "")
        cells = [f"{shares[n]:.0%}" if n in shares else "-" for n in names]
        rows.append([row["arm"], used, *cells, note or "-"])
    return head, rows


def failure_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Failure reasons per arm, grouped, with counts."""
    rows = [
        [a["arm"], str(g["count"]), g["reason"]]
        for a in data["arms"]
        for g in a.get("failure_reasons", [])
    ]
    return ["arm", "failed jobs", "reason"], rows


def failed_jobs_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Every failed training job with its reason."""
    rows = [
        [j["arm"], j["training_job"], j["status"], j["reason"] or "-"]
        for j in data.get("failed_jobs", [])
    ]
    return ["arm", "training job", "status", "reason"], rows


def warm_start_table(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Runs that started from parents: each parent with the jobs used of its succeeded ones."""
    rows = [
        [
            w["run"],
            w["type"],
            ", ".join(f"{p['name']} ({p['used']} of {p['succeeded']})" for p in w["parents"]),
            str(w["observations"]),
            str(w["first_suggestions"]),
            str(w.get("prior_observations", 0)),
        ]
        for w in data["warm_starts"]
    ]
    head = ["run", "type", "parents (used of succeeded)", "observations", "first", "prior"]
    return head, rows


HEADLINE_STATES = {
    "Pending": "pending",
    "InProgress": "running",
    "Stopping": "stopping",
    "Stopped": "stopped",
    "Failed": "failed",
    "Completed": "completed without an objective",
}


def headline(data: dict[str, Any]) -> tuple[str, bool] | None:
    """A plain sentence when no training job has an objective, naming what its jobs are, and
    whether it is an alarm (not while some still run); else, while a tuning job has not
    ended, a note naming it; else None."""
    if data["points"]:
        running = data.get("not_ended") or []
        if not running:
            return None
        shown = ", ".join(running[:5]) + (
            f" and {len(running) - 5} more" if len(running) > 5 else ""
        )
        return f"Not ended yet: {shown}; the figures below may still change.", False
    counts = Counter(job.get("status") for job in data.get("training_jobs", []))
    total = sum(counts.values())
    if not total:
        return "No training job has run yet.", False
    said = ", ".join(
        f"{counts[state]} {word}" for state, word in HEADLINE_STATES.items() if counts[state]
    )
    if counts["Pending"] or counts["InProgress"] or counts["Stopping"]:
        return f"No training job has an objective yet: {said}, of {total}.", False
    return f"No training job succeeded: {said}, of {total}.", True


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def md_text(text: str) -> str:
    """``text`` as literal Markdown table-cell text: no raw HTML, no cell or row breaks."""
    text = html.escape(text, quote=False).replace("|", "\\|")
    return " ".join(text.splitlines())


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(map(md_text, head)) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(map(md_text, row)) + " |" for row in rows]
    return "\n".join(lines)


def render_plots(data: dict[str, Any]) -> dict[str, bytes]:
    """The PNG bytes of each plot, by file name."""
    images = {}
    for filename, plot in PLOTS.items():
        with plt.rc_context({"text.parse_math": False}):  # a name with two '$' is plain text
            fig = plot(data)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110)
        plt.close(fig)
        images[filename] = buffer.getvalue()
    return images


def tables(data: dict[str, Any]) -> list[tuple[str, tuple[list[str], list[list[str]]]]]:
    """The report's tables in order; importance when it was built, the failure tables only
    when a job failed, and every failed job listed when none succeeded."""
    out = [
        ("Arms", arm_table(data)),
        ("Jobs needed to reach the other arms' best", reach_table(data)),
        ("Top configurations", top_table(data)),
    ]
    if data.get("importance"):
        out.append(("Hyperparameter importance (fANOVA)", importance_table(data)))
    if data.get("warm_starts"):
        out.append(("Warm start", warm_start_table(data)))
    if data.get("failed_jobs"):
        out.append(("Why training jobs failed", failure_table(data)))
    if data.get("failed_jobs") and not data["points"]:
        out.append(("Failed training jobs", failed_jobs_table(data)))
    return out


def render_html(data: dict[str, Any], title: str, images: dict[str, bytes] | None = None) -> str:
    """The self-contained page: tables, and the plots embedded as PNG data."""
    images = images if images is not None else render_plots(data)
    objective = f"{data['objective']['type']} {data['objective']['metric']}"
    said = headline(data)
    alert = (
        f"<p class='{'alert' if said[1] else 'note'}'><b>{html.escape(said[0])}</b></p>"
        if said
        else ""
    )
    figures = "".join(
        f'<figure><img class="plot" alt="{name}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>'
        for name, png in images.items()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:24px;max-width:1100px}"
        "table{border-collapse:collapse;margin:8px 0 20px}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}"
        "th{background:#f3f3f3}img.plot{max-width:100%;border:1px solid #eee}"
        ".alert{color:#b00}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{alert}<p>Objective: {html.escape(objective)}. "
        "Seeds are repeated runs of each arm; curves show the median and the min-max band.</p>"
        + "".join(f"<h2>{html.escape(t)}</h2>{_html_table(*tbl)}" for t, tbl in tables(data))
        + f"<h2>Plots</h2>{figures}"
        "<script>window.addEventListener('load',()=>{document.body.dataset.plotsRendered="
        "[...document.images].filter(i=>i.complete&&i.naturalWidth>0).length;});</script>"
        "</body></html>"
    )


def write_report(data: dict[str, Any], folder: str | Path, title: str) -> dict[str, Path]:
    """Write every file of the report into ``folder``; returns their paths by kind."""
    out = make_folder(folder, "the report")
    try:
        return _write_report(data, out, title)
    except OSError as exc:  # a file that cannot be written: one line, not a traceback
        raise TunerError(f"cannot write the report to {out}: {why(out, exc)}") from None


def _write_report(data: dict[str, Any], out: Path, title: str) -> dict[str, Path]:
    images = render_plots(data)
    for filename, png in images.items():
        (out / filename).write_bytes(png)
    paths = {
        "html": out / "report.html",
        "markdown": out / "report.md",
        "json": out / "report.json",
        "csv": out / "training_jobs.csv",
    }
    paths["html"].write_text(render_html(data, title, images), encoding="utf-8")
    objective = f"{data['objective']['type']} {data['objective']['metric']}"
    markdown = [f"# {md_text(title)}", ""]
    said = headline(data)
    markdown += [f"**{said[0]}**", ""] if said else []
    markdown += [f"Objective: {md_text(objective)}.", ""]
    for t, tbl in tables(data):
        markdown += [f"## {t}", "", _md_table(*tbl), ""]
    markdown += ["## Plots", ""] + [f"![{n}]({n})" for n in images] + [""]
    paths["markdown"].write_text("\n".join(markdown), encoding="utf-8")
    paths["json"].write_text(
        json.dumps(strict_json(data), indent=1, default=str, allow_nan=False), encoding="utf-8"
    )
    jobs_frame(data).to_csv(paths["csv"], index=False, date_format=CSV_TIME_FORMAT)
    return paths


def strict_json(value: Any) -> Any:
    """``value`` with every infinite or NaN float as None (JSON has no such numbers; REST's
    answers write them as null too)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


def jobs_frame(data: dict[str, Any]) -> pd.DataFrame:
    """Every training job as ``tuner export`` writes it (the same columns: hyperparameters as
    columns, ISO times), after ``TuningJobName``, ``Arm`` and ``Seed``."""
    from tuner.analytics import TuningJobAnalytics
    from tuner.summary import training_job_from_dict

    rows = data["training_jobs"]
    jobs = [training_job_from_dict({k: v for k, v in r.items() if k not in RUN_KEYS}) for r in rows]
    steps = {r["name"]: r["steps"] for r in rows if "steps" in r}
    frame = TuningJobAnalytics(
        list(data["hyperparameter_ranges"]),
        data["objective"]["metric"],
        lambda: jobs,
        (lambda: steps) if len(steps) == len(rows) else None,
    ).dataframe()
    frame.insert(0, "Seed", [r.get("seed") for r in rows])
    frame.insert(0, "Arm", [r.get("arm") for r in rows])
    frame.insert(0, "TuningJobName", [j.tuning_job_name for j in jobs])
    return frame


RUN_KEYS = ("arm", "seed", "steps")
