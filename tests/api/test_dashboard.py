"""The dashboard over HTTP, against a real ``tuner serve``: the token guards every piece of data,
the pages are shells without data or foreign origins, and the data endpoints agree with the
report and describe."""

from __future__ import annotations

import gzip
import json
import re
import time

import httpx
import pytest
from starlette.requests import Request

from api.dashboard import STATIC, Trials, accepts_gzip, compact_json
from tests.api.conftest import definition, wait_status

DATA_ENDPOINTS = [
    "/dashboard/tuning-jobs",
    "/dashboard/compare?names=x",
    "/tuning-jobs/x/trials",
    "/training-jobs/x-001/log-chunk",
]
PAGES = ["/ui/login", "/ui/tuning-jobs", "/ui/tuning-jobs/dash", "/ui/compare"]


@pytest.mark.parametrize("path", DATA_ENDPOINTS)
def test_dashboard_data_needs_the_token(server, path):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = httpx.get(server.url + path, headers=headers)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"


def test_pages_are_shells_without_data_and_without_other_origins(server, http):
    http.post("/tuning-jobs", json=definition("dash", max_jobs=1, max_parallel_jobs=1))
    wait_status(http, "dash", {"Completed"})
    assets = [f"/ui/static/{p.name}" for p in sorted(STATIC.iterdir())]
    for path in PAGES + assets:
        response = httpx.get(server.url + path)  # no token
        assert response.status_code == 200, path
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
        assert "dash-001" not in response.text and "accuracy=" not in response.text
        assert not re.search(r"https?://", response.text), f"{path} names another origin"
        if path in PAGES:
            scripts = re.findall(r"<script([^>]*)>(.*?)</script>", response.text, re.S)
            assert scripts and all('src="/ui/static/' in a and not body for a, body in scripts)
            assert not re.search(r"\son[a-z]+=", response.text)  # no inline handler
    assert httpx.get(f"{server.url}/ui", follow_redirects=True).url.path == "/ui/tuning-jobs"


def test_overview_shows_progress_and_best_and_filters_by_status_and_name(http):
    for name in ("alpha-one", "alpha-two", "beta-one"):
        http.post("/tuning-jobs", json=definition(name, max_jobs=2, max_parallel_jobs=2))
    http.post("/tuning-jobs", json=definition("slow-one", sleep=60, max_jobs=3))
    for name in ("alpha-one", "alpha-two", "beta-one"):
        wait_status(http, name, {"Completed"})
    page = http.get("/dashboard/tuning-jobs").json()
    assert [j["name"] for j in page["items"]] == ["slow-one", "beta-one", "alpha-two", "alpha-one"]
    done = page["items"][1]
    jobs = http.get("/tuning-jobs/beta-one/training-jobs").json()
    assert done["progress"] == {"ended": 2, "running": 0, "total": 2, "max_jobs": 2}
    assert done["best_objective"] == max(j["objective"] for j in jobs)
    assert done["strategy"] == "Random" and done["objective"]["metric"] == "accuracy"
    deadline = time.monotonic() + 30

    def slow() -> dict:
        return http.get("/dashboard/tuning-jobs", params={"name": "slow"}).json()["items"][0]

    while slow()["progress"]["running"] < 2:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    names = [j["name"] for j in http.get("/dashboard/tuning-jobs?name=alpha").json()["items"]]
    assert names == ["alpha-two", "alpha-one"]
    running = http.get("/dashboard/tuning-jobs", params={"status": "InProgress"}).json()
    assert [j["name"] for j in running["items"]] == ["slow-one"]
    first = http.get("/dashboard/tuning-jobs", params={"limit": 3}).json()
    assert first["next_offset"] == 3
    rest = http.get("/dashboard/tuning-jobs", params={"limit": 3, "offset": 3}).json()
    assert [j["name"] for j in rest["items"]] == ["alpha-one"] and rest["next_offset"] is None
    assert http.get("/dashboard/tuning-jobs?name=a%25").json()["items"] == []  # % is literal
    http.post("/tuning-jobs/slow-one/stop")
    wait_status(http, "slow-one", {"Stopped"})


def test_trials_agree_with_the_report_and_describe(http):
    http.post("/tuning-jobs", json=definition("cols", max_jobs=5, max_parallel_jobs=2))
    wait_status(http, "cols", {"Completed"})
    trials = http.get("/tuning-jobs/cols/trials").json()
    described = http.get("/tuning-jobs/cols").json()
    report = http.get("/tuning-jobs/cols/report").json()
    columns = trials["columns"]
    assert columns["number"] == [1, 2, 3, 4, 5]
    assert all(len(v) == 5 for k, v in columns.items() if k != "hyperparameters")
    assert set(columns["hyperparameters"]) == {"x", "y"}
    jobs = {j["name"]: j for j in report["training_jobs"]}
    for i, name in enumerate(columns["name"]):
        assert columns["objective"][i] == jobs[name]["objective"]
        assert columns["steps"][i] == jobs[name]["steps"] == 2
        assert columns["hyperparameters"]["x"][i] == jobs[name]["hyperparameters"]["x"]
        assert columns["duration"][i] == pytest.approx(jobs[name]["duration"], abs=1e-3)
    curve = report["curves"]["cols"][0]
    assert trials["curve"]["best"] == [p["best"] for p in curve]
    assert trials["curve"]["jobs"] == [1, 2, 3, 4, 5]
    assert trials["training_job_status_counters"] == described["training_job_status_counters"]
    assert trials["best_training_job"]["name"] == described["best_training_job"]["name"]
    assert http.get("/tuning-jobs/nope/trials").status_code == 404


def test_log_chunks_follow_a_running_job(http):
    http.post("/tuning-jobs", json=definition("logs", sleep=3.0, max_jobs=1, max_parallel_jobs=1))
    deadline = time.monotonic() + 30
    while not http.get("/tuning-jobs/logs/training-jobs").json():  # recorded, maybe not started
        assert time.monotonic() < deadline
        time.sleep(0.1)
    offset, text, chunks = 0, "", 0
    while True:
        response = http.get("/training-jobs/logs-001/log-chunk", params={"offset": offset})
        assert response.status_code == 200, response.text
        chunk = response.json()
        assert chunk["offset"] == offset
        text += chunk["text"]
        chunks += bool(chunk["text"])
        offset = chunk["next_offset"]
        if chunk["ended"] and offset >= chunk["size"]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert chunks >= 2  # the epochs arrived while the job ran, not all at once at its end
    whole = http.get("/training-jobs/logs-001/logs").text
    assert text == whole and "[Epoch 1]" in text and text.endswith("done\n")
    last = http.get("/training-jobs/logs-001/log-chunk", params={"offset": -5}).json()
    assert last["text"] == "done\n" and last["offset"] == len(whole.encode()) - 5
    small = http.get("/training-jobs/logs-001/log-chunk", params={"limit": 7}).json()
    assert small["text"] == whole[:7] and small["next_offset"] == 7
    assert http.get("/training-jobs/nope-001/log-chunk").status_code == 404


def test_compare_gives_the_reports_figures_and_statuses(http):
    for name, arm in (("cmp-a", "first"), ("cmp-b", "first"), ("cmp-c", "second")):
        body = definition(name, max_jobs=2, max_parallel_jobs=2, tags={"arm": arm})
        http.post("/tuning-jobs", json=body)
    for name in ("cmp-a", "cmp-b", "cmp-c"):
        wait_status(http, name, {"Completed"})
    names = ["cmp-a", "cmp-b", "cmp-c"]
    data = http.get("/dashboard/compare", params={"names": names}).json()
    report = http.get("/reports/compare", params={"names": names}).json()
    assert [a["arm"] for a in data["arms"]] == ["first", "second"]
    assert data["arms"][0]["runs"] == ["cmp-a", "cmp-b"]
    assert data["curves"] == report["curves"]
    assert data["statuses"] == dict.fromkeys(names, "Completed")
    assert "training_jobs" not in data
    assert data["importance"] == []  # the live view does not pay for fANOVA
    asked = {"names": names, "importance": "true"}
    judged = http.get("/dashboard/compare", params=asked).json()["importance"]
    assert judged == http.get("/reports/compare", params=asked).json()["importance"]
    assert [(r["arm"], r["why"]) for r in judged] == [
        ("first", "4 completed jobs, fewer than the 10 it needs"),
        ("second", "2 completed jobs, fewer than the 10 it needs"),
    ]
    wrong = http.get("/dashboard/compare", params={"names": names, "importance": "perhaps"})
    assert wrong.status_code == 422 and "importance" in wrong.text and "perhaps" in wrong.text
    bad = http.get("/dashboard/compare", params={"names": ["../etc"]})
    assert bad.status_code == 400 and "names must match" in bad.json()["detail"]
    assert http.get("/dashboard/compare", params={"names": ["nope"]}).status_code == 404


def test_large_trials_travel_gzipped_to_clients_that_accept_it():
    n = 5000
    data = {
        "name": "big",
        "status": "InProgress",
        "status_reason": None,
        "strategy": "Random",
        "objective": {"metric": "accuracy", "type": "Maximize"},
        "limits": {"max_jobs": n, "max_parallel_jobs": 8},
        "created_at": 0.0,
        "ended_at": None,
        "now": 1.0,
        "training_job_status_counters": {"Completed": n},
        "stopped_early": 0,
        "failure_reasons": [],
        "best_training_job": None,
        "consumed_seconds": 1.0,
        "compute_unit": "CPU",
        "hyperparameter_ranges": {},
        "curve": {"jobs": list(range(n)), "best": [0.5] * n},
        "columns": {"number": list(range(n)), "objective": [float("inf")] + [0.25] * (n - 1)},
    }
    accepts = Request({"type": "http", "headers": [(b"accept-encoding", b"gzip, deflate")]})
    packed = compact_json(Trials, data, accepts)
    plain = compact_json(Trials, data, Request({"type": "http", "headers": []}))
    assert packed.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert gzip.decompress(packed.body) == plain.body
    assert len(plain.body) > 3 * len(packed.body)
    body = json.loads(plain.body)  # strict JSON: infinity travels as null, as FastAPI sends it
    assert body["columns"]["objective"][:2] == [None, 0.25]


def test_a_log_chunk_never_stalls_inside_a_character(tmp_path, sqlite_url):
    """A limit smaller than the character at the offset gave next_offset == offset for ever, and
    an offset from the end that cut a character began the text with U+FFFD."""
    from api.dashboard_data import log_chunk
    from tuner.storage import Store

    store = Store(sqlite_url)
    store.create_tuning_job("utf", {"name": "utf"})
    store.create_training_job("utf", 1, {})
    store.mark_started("utf-001", "local:0:0:utf-001", str(tmp_path))
    whole = "a☃b€\U0001f600c\n"
    (tmp_path / "log.txt").write_text(whole, encoding="utf-8")
    size = len(whole.encode())
    for limit in (1, 2, 3, 4, 7):
        offset, text = 0, ""
        while offset < size:
            chunk = log_chunk(store, "utf-001", offset, limit)
            assert chunk["next_offset"] > offset, (limit, offset)
            text, offset = text + chunk["text"], chunk["next_offset"]
        assert text == whole, limit
    for back in range(1, size + 1):  # every cut from the end starts at a whole character
        chunk = log_chunk(store, "utf-001", -back, 64)
        assert "\ufffd" not in chunk["text"] and whole.endswith(chunk["text"]), back


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("gzip, deflate", True),
        ("GZIP;q=0.5", True),
        ("*", True),
        ("gzip;q=0", False),  # refused gzip: it was sent gzip anyway
        ("identity, gzip;q=0", False),
        ("*;q=1, gzip;q=0", False),
        ("nogzip-please", False),
        ("", False),
    ],
)
def test_gzip_only_for_clients_that_accept_it(header, accepted):
    assert accepts_gzip(header) is accepted
