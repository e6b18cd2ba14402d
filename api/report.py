"""The report of one or several tuning jobs: JSON data and a self-contained HTML page.

A stop-gap until the comparison reports land: best-so-far curves (by jobs and by time) drawn as
inline SVG, and a table of training jobs per tuning job. Opens from disk, no network.
"""

from __future__ import annotations

import html
from typing import Any

from tuner.records import TrainingJob, TrainingStatus, TuningJob
from tuner.summary import describe, training_job_dict


def best_so_far(record: TuningJob, jobs: list[TrainingJob]) -> list[dict[str, float]]:
    """One point per ended training job, in order of ending: jobs so far, seconds, best value."""
    maximize = record.definition.get("objective_type", "Maximize") == "Maximize"
    ended = sorted((j for j in jobs if j.ended_at is not None), key=lambda j: j.ended_at or 0.0)
    curve: list[dict[str, float]] = []
    best: float | None = None
    for count, job in enumerate(ended, start=1):
        value = job.objective if job.status is TrainingStatus.COMPLETED else None
        if value is not None and (best is None or (value > best if maximize else value < best)):
            best = value
        if best is not None:
            seconds = (job.ended_at or record.created_at) - record.created_at
            curve.append({"jobs": count, "seconds": seconds, "best": best})
    return curve


def report_data(record: TuningJob, jobs: list[TrainingJob]) -> dict[str, Any]:
    return {
        "tuning_job": describe(record, jobs),
        "training_jobs": [training_job_dict(j) for j in jobs],
        "best_so_far": best_so_far(record, jobs),
    }


def _svg(series: list[tuple[str, list[tuple[float, float]]]], x_label: str) -> str:
    points = [p for _, pts in series for p in pts]
    if not points:
        return "<p>No completed training job yet.</p>"
    width, height, pad = 560, 260, 40
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1

    def at(x: float, y: float) -> str:
        px = pad + (x - x0) / (x1 - x0) * (width - 2 * pad)
        py = height - pad - (y - y0) / (y1 - y0) * (height - 2 * pad)
        return f"{px:.1f},{py:.1f}"

    colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"]
    lines = [
        f'<polyline fill="none" stroke="{colours[i % 5]}" stroke-width="2" '
        f'points="{" ".join(at(x, y) for x, y in pts)}"><title>{html.escape(name)}</title>'
        "</polyline>"
        for i, (name, pts) in enumerate(series)
    ]
    legend = "".join(
        f'<text x="{pad + 150 * i}" y="14" fill="{colours[i % 5]}">{html.escape(name)}</text>'
        for i, (name, _) in enumerate(series)
    )
    return (
        f'<svg class="plot" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" '
        f'fill="none" stroke="#999"/>{legend}{"".join(lines)}'
        f'<text x="{width / 2}" y="{height - 8}">{html.escape(x_label)}</text>'
        f'<text x="4" y="{pad - 6}">{y1:.4g}</text><text x="4" y="{height - pad}">{y0:.4g}</text>'
        "</svg>"
    )


def report_html(reports: list[dict[str, Any]]) -> str:
    """One page for one or several tuning jobs' ``report_data``."""
    by_jobs = [
        (r["tuning_job"]["name"], [(p["jobs"], p["best"]) for p in r["best_so_far"]])
        for r in reports
    ]
    by_time = [
        (r["tuning_job"]["name"], [(p["seconds"], p["best"]) for p in r["best_so_far"]])
        for r in reports
    ]
    sections = []
    for r in reports:
        t = r["tuning_job"]
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    j["name"],
                    j["status"],
                    j["hyperparameters"],
                    j["objective"],
                    None if j["duration"] is None else round(j["duration"], 2),
                    j["failure_reason"],
                )
            )
            + "</tr>"
            for j in r["training_jobs"]
        )
        best = t["best_training_job"]
        sections.append(
            f"<h2>{html.escape(t['name'])}</h2><p>{html.escape(str(t['status']))}: "
            f"{html.escape(str(t['status_reason']))}; strategy {html.escape(str(t['strategy']))};"
            f" best {html.escape(str(best['objective'] if best else None))}</p>"
            "<table><tr><th>job</th><th>status</th><th>hyperparameters</th><th>objective</th>"
            f"<th>seconds</th><th>reason</th></tr>{rows}</table>"
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>tuning report</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}</style></head><body>"
        "<h1>Tuning report</h1><h3>Best objective so far, by training jobs ended</h3>"
        f"{_svg(by_jobs, 'training jobs ended')}"
        f"<h3>Best objective so far, by wall-clock seconds</h3>{_svg(by_time, 'seconds')}"
        f"{''.join(sections)}</body></html>"
    )
