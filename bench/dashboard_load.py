"""The dashboard with 5,000 training jobs: the compact endpoint's latency and size, and the
tuning job page's load time in headless Chromium.

Writes one tuning job with JOBS training jobs (four hyperparameters, STEPS metric points each,
the last few still running) straight into a SQLite store, leased to another process so the
service only reads it; starts ``tuner serve`` on it (127.0.0.1) and measures, side by side:
``GET /tuning-jobs/{name}/trials`` (what the page polls), ``GET /tuning-jobs/{name}/training-jobs``
(the full records), ``GET /tuning-jobs/{name}/report`` (the report's JSON) and
``GET /tuning-jobs/{name}/fidelity`` (the early-stopping panel's): latency p50/p90
over REPEAT calls, JSON bytes and bytes on the wire (the trials are gzipped); then
``GET /dashboard/tuning-jobs``. Then it opens the tuning job page in Chromium (Selenium, Debian's
chromedriver) LOADS times and reads the page's own timings: data fetched, drawn (counters,
curves, scatter plots, parallel coordinates, one page of the table), and from navigation start
to drawn. Loopback only; bounded in time.

    python bench/dashboard_load.py [--jobs 5000] [--repeat 20] [--loads 5]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.api_load import TOKEN, start_server
from tuner.definition import TuningJobDefinition
from tuner.records import TrainingStatus, TuningStatus
from tuner.storage import Store
from tuner.storage.models import MetricPointRow, TrainingJobRow, TuningJobRow

NAME = "big"
STEPS = 10
RUNNING = 8


def fill(url: str, jobs: int) -> None:
    """One InProgress tuning job (leased elsewhere) with ``jobs`` training jobs, written in bulk."""
    definition = TuningJobDefinition.parse(
        {
            "name": NAME,
            "strategy": "Random",
            "objective_metric_name": "accuracy",
            "max_jobs": jobs + 100,
            "max_parallel_jobs": RUNNING,
            "metric_definitions": [{"Name": "accuracy", "Regex": r"accuracy=([0-9.]+)"}],
            "hyperparameter_ranges": {
                "lr": {
                    "type": "continuous",
                    "min_value": 1e-4,
                    "max_value": 1.0,
                    "scaling_type": "Logarithmic",
                },
                "momentum": {"type": "continuous", "min_value": 0.0, "max_value": 0.99},
                "batch": {"type": "integer", "min_value": 16, "max_value": 512},
                "optimizer": {"type": "categorical", "values": ["sgd", "adam", "adamw"]},
            },
            "job_definition": {"command": ["python", "train.py"]},
        }
    )
    store = Store(url)
    store.create_tuning_job(NAME, definition.to_json(), owner="elsewhere:1", ttl=86400)
    rng = random.Random(0)
    with Session(store.engine) as session:
        tuning = session.query(TuningJobRow).filter_by(name=NAME).one()
        t0 = tuning.created_at - jobs * 2.0
        tuning.created_at = t0
        rows = []
        for n in range(1, jobs + 1):
            lr = 10 ** rng.uniform(-4, 0)
            momentum = rng.uniform(0, 0.99)
            acc = max(0.0, 0.95 - 0.04 * (math.log10(lr) + 2) ** 2 - 0.1 * (momentum - 0.9) ** 2)
            running = n > jobs - RUNNING
            failed = not running and rng.random() < 0.03
            start = t0 + n * 2.0
            status = (
                TrainingStatus.IN_PROGRESS
                if running
                else TrainingStatus.FAILED
                if failed
                else TrainingStatus.COMPLETED
            )
            rows.append(
                TrainingJobRow(
                    tuning_job_id=tuning.id,
                    name=f"{NAME}-{n:03d}",
                    number=n,
                    status=status.value,
                    objective_status="Pending" if running else "Failed" if failed else "Succeeded",
                    hyperparameters={
                        "lr": lr,
                        "momentum": momentum,
                        "batch": rng.randint(16, 512),
                        "optimizer": rng.choice(["sgd", "adam", "adamw"]),
                    },
                    objective=None if running or failed else acc + rng.gauss(0, 0.01),
                    failure_reason="exit code 1; last log line: CUDA out of memory"
                    if failed
                    else None,
                    exit_code=None if running else 1 if failed else 0,
                    handle=f"local:{n}",
                    workdir=None,
                    created_at=start,
                    started_at=start,
                    running_at=start + 0.1,
                    ended_at=None if running else start + 15.0 + rng.random(),
                )
            )
        session.add_all(rows)
        session.flush()
        session.add_all(
            MetricPointRow(
                training_job_id=r.id, name="accuracy", value=0.5, seq=s, timestamp=r.created_at
            )
            for r in rows
            for s in range(STEPS)
        )
        session.commit()
    assert store.get_tuning_job(NAME).status is TuningStatus.IN_PROGRESS
    store.close()


def timed(client: httpx.Client, path: str, repeat: int) -> dict[str, Any]:
    times, body, wire = [], b"", 0
    for _ in range(repeat):
        began = time.perf_counter()
        response = client.get(path)  # httpx accepts gzip, as browsers do
        times.append(time.perf_counter() - began)
        response.raise_for_status()
        body, wire = response.content, response.num_bytes_downloaded
    times.sort()
    return {
        "p50_ms": 1000 * statistics.median(times),
        "p90_ms": 1000 * times[int(0.9 * (len(times) - 1))],
        "bytes": len(body),
        "wire_bytes": wire,
    }


def page_loads(base: str, loads: int) -> list[dict[str, float]]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    profile = tempfile.mkdtemp(prefix="tuner-bench-chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1300,1500",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(
        service=Service(shutil.which("chromedriver") or "chromedriver"), options=options
    )
    results = []
    try:
        driver.get(f"{base}/ui/login")
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        driver.find_element(By.ID, "submit").click()
        WebDriverWait(driver, 30).until(lambda d: "/ui/tuning-jobs" in d.current_url)
        for _ in range(loads):
            driver.get(f"{base}/ui/tuning-jobs/{NAME}")
            data = WebDriverWait(driver, 60).until(
                lambda d: d.execute_script(
                    "return document.body.dataset.loaded && {...document.body.dataset}"
                )
            )
            rows = len(driver.find_elements(By.CSS_SELECTOR, "#job-rows tr"))
            time.sleep(2.5)  # one more poll: the refresh of a page already drawn
            again = driver.execute_script("return {...document.body.dataset}")
            results.append(
                {
                    "fetch_ms": float(data["fetchMs"]),
                    "draw_ms": float(data["renderMs"]),
                    "load_ms": float(data["loadMs"]),
                    "refresh_ms": float(again.get("refreshMs", "nan")),
                    "rows": rows,
                }
            )
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tuner-bench-dashboard-"))
    url = f"sqlite:///{folder / 'tuner.db'}"
    began = time.perf_counter()
    fill(url, args.jobs)
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(
        f"wrote {args.jobs} training jobs, {args.jobs * STEPS} metric points to SQLite "
        f"in {time.perf_counter() - began:.1f} s"
    )
    process, base = start_server(folder, url)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
            client.get(f"/tuning-jobs/{NAME}/trials").raise_for_status()  # warm up
            figures = {
                "trials (the page's poll)": timed(
                    client, f"/tuning-jobs/{NAME}/trials", args.repeat
                ),
                "training-jobs (full records)": timed(
                    client, f"/tuning-jobs/{NAME}/training-jobs", args.repeat
                ),
                "report JSON": timed(
                    client, f"/tuning-jobs/{NAME}/report", max(3, args.repeat // 4)
                ),
                "fidelity (early-stopping panel)": timed(
                    client, f"/tuning-jobs/{NAME}/fidelity", max(3, args.repeat // 4)
                ),
                "dashboard/tuning-jobs (list)": timed(
                    client, "/dashboard/tuning-jobs", args.repeat
                ),
            }
        print(f"\n{'endpoint':32} {'p50 ms':>8} {'p90 ms':>8} {'bytes':>10} {'on wire':>9}")
        for label, f in figures.items():
            print(
                f"{label:32} {f['p50_ms']:8.0f} {f['p90_ms']:8.0f} {f['bytes']:10,} "
                f"{f['wire_bytes']:9,}"
            )
        t, full = figures["trials (the page's poll)"], figures["training-jobs (full records)"]
        print(
            f"trials / training-jobs: latency {t['p50_ms'] / full['p50_ms']:.2f}, "
            f"bytes {t['bytes'] / full['bytes']:.2f}"
        )
        if shutil.which("chromedriver") and shutil.which("chromium"):
            loads = page_loads(base, args.loads)
            print(f"\ntuning job page in headless Chromium, {len(loads)} loads (median):")
            for key in ("fetch_ms", "draw_ms", "load_ms", "refresh_ms"):
                print(f"  {key:11} {statistics.median(x[key] for x in loads):8.0f}")
            print(f"  table rows in the page: {loads[0]['rows']}")
        else:
            print("\nno chromium/chromedriver: page load not measured")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
