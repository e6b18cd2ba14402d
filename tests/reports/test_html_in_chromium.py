"""The HTML report opened in headless Chromium: the plots render, offline; the screenshot is
kept in test-artifacts/ for people to look at."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.reports.test_comparison import spec_data
from tuner.comparison import ComparisonSpec, run_comparison
from tuner.reports import report
from tuner.storage import Store

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        skip_or_fail("chromium is not installed (apt-get install chromium)")
    return str(path)


def test_report_renders_its_plots_in_chromium(tmp_path, sqlite_url, chromium):
    spec = ComparisonSpec.parse(spec_data(tmp_path, seeds=[1]))
    names = run_comparison(spec, storage=sqlite_url)
    paths = report(Store(sqlite_url), names, tmp_path / "report", "Chromium check")
    url = paths["html"].resolve().as_uri()
    profile = tmp_path / "profile"
    dom = subprocess.run(
        [
            chromium,
            *FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    match = re.search(r'data-plots-rendered="(\d+)"', dom.stdout)
    assert match is not None, "the page's load handler did not run"
    assert match.group(1) == "4"  # every embedded plot decoded and laid out

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-screenshot.png"
    done = subprocess.run(
        [
            chromium,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            "--window-size=1200,2200",
            "--hide-scrollbars",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and shot.stat().st_size > 50_000
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.std() > 0.05  # not a blank page
