"""The best-so-far plots: curves that never get worse, and an axis zoomed to the results."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tuner.reports.render import best_band, plot_best_by_jobs, plot_best_by_time, zoom


def curve(points: list[tuple[float, float | None]]) -> list[dict]:
    """A run's best-so-far curve from (seconds, objective or None for a failed job)."""
    best, out = None, []
    for k, (seconds, value) in enumerate(points, start=1):
        if value is not None and (best is None or value > best):
            best = value
        out.append({"jobs": k, "seconds": seconds, "best": best})
    return out


# Run "late" fails first and then reports a poor value: before the fix, the median dropped from
# about 0.95 to 0.92 when it joined, and the band's low edge spiked down to 0.1.
RUNS = [
    curve([(1.0, 0.97), (3.0, 0.971), (7.0, 0.972)]),
    curve([(1.0, None), (5.0, 0.1), (6.0, 0.965)]),
    curve([(2.0, 0.92), (4.0, 0.96), (8.0, 0.969)]),
]
DATA = {
    "curves": {"a": RUNS, "never": [curve([(1.0, None), (2.0, None)])]},
    "objective": {"metric": "accuracy", "type": "Maximize"},
}


def non_decreasing(values: np.ndarray) -> bool:
    drawn = values[~np.isnan(values)]
    return len(drawn) > 0 and bool(np.all(np.diff(drawn) >= 0))


def test_band_starts_when_every_run_has_a_result_and_never_goes_down():
    band = best_band([[p["best"] for p in run] for run in RUNS], maximize=True)
    assert band is not None
    assert math.isnan(band[1][0]) and math.isnan(band[2][0])  # one run has no result yet
    assert band[0][0] == 0.92  # the median counts it as the worst: 0.97, 0.92 and nothing
    assert all(non_decreasing(a) for a in band)
    assert best_band([[None, None]], maximize=True) is None


def test_plotted_curves_never_go_down_by_jobs_or_by_time():
    for plot in (plot_best_by_jobs, plot_best_by_time):
        fig = plot(DATA)
        lines = fig.axes[0].get_lines()
        assert len(lines) == 1  # the run-less arm draws nothing
        assert non_decreasing(np.asarray(lines[0].get_ydata(), dtype=float)), plot.__name__
        low, high = fig.axes[0].get_ylim()
        # zoomed to the results (0.965 to 0.972), not 0.1-1.0
        assert 0.9 < low < 0.965 and 0.972 < high < 0.98, (plot.__name__, low, high)


def test_zoom_for_minimising_and_for_nothing():
    band = (np.array([0.5, 0.3]), np.array([0.4, 0.2]), np.array([0.6, 0.25]))
    low, high = zoom([band], maximize=False)
    assert low < 0.2 < 0.25 < high <= 0.6
    assert zoom([], maximize=True) is None


def test_legends_cut_long_arm_names_and_jobs_are_counted_in_whole_numbers():
    """A 200-character arm stretched the legend past the figure; the jobs axis read 1.0, 1.5."""
    long = "arm-" + "x" * 196
    data = {**DATA, "curves": {long: RUNS}}
    for plot in (plot_best_by_jobs, plot_best_by_time):
        fig = plot(data)
        (text,) = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert text.startswith("arm-xxx") and "\u2026" in text and len(text) < 60, text
    fig = plot_best_by_jobs(data)
    fig.canvas.draw()
    ticks = fig.axes[0].get_xticks()
    assert all(float(t).is_integer() for t in ticks), ticks


def test_a_report_draws_objectives_near_the_largest_float(tmp_path):
    """A diverged loss of 1.7e308 (finite, so a completed job) failed every report of its
    run: matplotlib could not place ticks on such an axis."""
    from tuner.records import TrainingStatus
    from tuner.reports import build, write_report
    from tuner.storage import Store

    store = Store(f"sqlite:///{tmp_path / 'db'}")
    definition = {
        "objective_metric_name": "loss",
        "objective_type": "Minimize",
        "hyperparameter_ranges": {"x": {"type": "continuous", "min_value": 0, "max_value": 1}},
    }
    store.create_tuning_job("huge", definition)
    for number, value in enumerate([1.7e308, 1.0, -1e308], start=1):
        job = store.create_training_job("huge", number, {"x": number / 4})
        store.finish_training_job(job.name, TrainingStatus.COMPLETED, value)
    paths = write_report(build(store, ["huge"]), str(tmp_path / "report"), "huge")
    assert all(Path(p).stat().st_size > 0 for p in paths.values())
