"""Comparison reports of tuning jobs: ``report(store, names, folder)`` writes all of them."""

from __future__ import annotations

from pathlib import Path

from tuner.reports.data import build
from tuner.reports.render import arm_table, headline, render_html, write_report
from tuner.storage import Store


def report(store: Store, names: list[str], folder: str | Path, title: str) -> dict[str, Path]:
    """Build the data of these tuning jobs, hyperparameter importance included, and write the
    report files into ``folder``."""
    return write_report(build(store, names, importance=True), folder, title)


__all__ = ["arm_table", "build", "headline", "render_html", "report", "write_report"]
