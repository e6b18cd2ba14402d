"""The dashboard in headless Chromium driven by Selenium (Debian's chromium and chromium-driver),
against a real ``tuner serve`` running training jobs that print a metric line a second: log in,
watch the counters change, follow a log, press Stop, compare. Screenshots are kept in
test-artifacts/ for people to look at."""

from __future__ import annotations

import importlib.util
import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import TOKEN, definition, wait_status
from tests.conftest import skip_or_fail
from tuner.summary import objective_text

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT = 60
NONE = "\u2013"  # what the pages show for a value not known yet (an en dash)


@pytest.fixture
def browser() -> Iterator[Any]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        skip_or_fail("chromium or chromedriver is missing (apt-get install chromium-driver)")
    if importlib.util.find_spec("selenium") is None:
        skip_or_fail("selenium is not installed (the dev extra)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    profile = tempfile.mkdtemp(prefix="tuner-chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1300,1500",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    # An explicit driver: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(service=Service(str(driver_path)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def until(driver: Any, check: Callable[[Any], Any], what: str, timeout: float = WAIT) -> Any:
    """Poll ``check`` until it is truthy. A check that lands while the page navigates (after a
    login, say) is refused by Chromium as "aborted by navigation"; that counts as not yet."""
    from selenium.common.exceptions import (
        StaleElementReferenceException,
        TimeoutException,
        WebDriverException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    def settled(d: Any) -> Any:
        try:
            return check(d)
        except WebDriverException as error:
            if "aborted by navigation" in str(error.msg):
                return False
            raise

    try:
        return WebDriverWait(driver, timeout, 0.2, [StaleElementReferenceException]).until(settled)
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what} on {driver.current_url}") from None


def text(driver: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, element_id).text)


def log_in(driver: Any, url: str, token: str = TOKEN) -> None:
    """Open ``url``; no token yet, so the login page comes first and then leads back."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    until(
        driver,
        lambda d: "/ui/login" in d.current_url and d.find_elements(By.ID, "token"),
        "the login page",
    )
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "submit").click()


def screenshot(driver: Any, name: str) -> Path:
    from matplotlib.image import imread

    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    assert imread(path).std() > 0.05  # not a blank page
    return path


def script_errors(driver: Any) -> list[str]:
    """Errors the pages' scripts raised (failed requests, such as a 401, are left out)."""
    return [e["message"] for e in driver.get_log("browser") if e.get("source") == "javascript"]


def test_watch_follow_a_log_and_stop_a_running_tuning_job(server, http, browser):
    from selenium.webdriver.common.by import By

    body = definition("live", sleep=6.0, max_jobs=8, max_parallel_jobs=2)
    body["job_definition"]["static_hyperparameters"]["epochs"] = 6  # a metric line a second
    assert http.post("/tuning-jobs", json=body).status_code == 201

    log_in(browser, f"{server.url}/ui/tuning-jobs/live")
    until(browser, lambda d: d.current_url.endswith("/ui/tuning-jobs/live"), "the job page")
    until(
        browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded"), "data"
    )
    assert text(browser, "title") == "live" and text(browser, "status") == "InProgress"
    first = text(browser, "c-progress")
    until(browser, lambda d: text(d, "c-completed") not in (NONE, "0"), "a completed job")
    assert text(browser, "c-progress") != first  # the counters moved without a reload
    assert text(browser, "c-best") != NONE and "live-0" in text(browser, "c-best-sub")
    assert browser.execute_script("return performance.getEntriesByType('navigation').length") == 1

    def running_row(d: Any) -> Any:
        rows = d.find_elements(By.CSS_SELECTOR, "#job-rows tr")
        return next((r for r in rows if "InProgress" in r.text), None)

    row = until(browser, running_row, "a running training job")
    job = row.get_attribute("data-job")
    row.click()
    until(browser, lambda d: "[Epoch 0]" in text(d, "log"), "the log's first line")
    seen = text(browser, "log")
    until(browser, lambda d: len(text(d, "log")) > len(seen), "the log to grow")
    browser.execute_script("window.scrollTo(0, 0)")
    screenshot(browser, "dashboard-tuning-job.png")
    until(browser, lambda d: "done" in text(d, "log"), f"the end of {job}'s log")
    until(browser, lambda d: "complete" in text(d, "log-state"), "the log to be complete")
    assert text(browser, "log") == http.get(f"/training-jobs/{job}/logs").text.rstrip("\n")

    stop = browser.find_element(By.ID, "stop")
    stop.click()
    assert stop.text == "Really stop?"  # a second click confirms
    stop.click()
    until(browser, lambda d: text(d, "status") == "Stopped", "the Stopped status", timeout=90)
    assert not browser.find_element(By.ID, "stop").is_enabled()
    assert wait_status(http, "live", {"Stopped"})["status"] == "Stopped"
    screenshot(browser, "dashboard-tuning-job-stopped.png")
    assert script_errors(browser) == []


def test_list_login_and_compare_pages(server, http, browser):
    from selenium.webdriver.common.by import By

    for name, jobs in (("cmp-random", 10), ("cmp-other", 3)):  # fANOVA needs 10
        http.post("/tuning-jobs", json=definition(name, max_jobs=jobs, max_parallel_jobs=2))
    for name in ("cmp-random", "cmp-other"):
        wait_status(http, name, {"Completed"})

    log_in(browser, f"{server.url}/ui/tuning-jobs", token="wrong")
    until(browser, lambda d: "refused" in text(d, "error"), "the refusal of a wrong token")
    token = browser.find_element(By.ID, "token")
    token.clear()
    token.send_keys(TOKEN)
    browser.find_element(By.ID, "submit").click()
    until(
        browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rows tr[data-name]")) == 2, "rows"
    )
    assert "3 / 0 / 3" in browser.find_element(By.CSS_SELECTOR, "#rows").text
    browser.find_element(By.ID, "name").send_keys("random")
    until(
        browser,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rows tr[data-name]")) == 1,
        "filter",
    )
    browser.find_element(By.ID, "name").clear()
    until(
        browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rows tr[data-name]")) == 2, "all"
    )
    for box in browser.find_elements(By.CSS_SELECTOR, "#rows input[type=checkbox]"):
        box.click()
    screenshot(browser, "dashboard-tuning-jobs.png")
    browser.find_element(By.ID, "compare").click()

    until(browser, lambda d: "/ui/compare?" in d.current_url, "the compare page")
    until(
        browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded"), "data"
    )
    arms = {
        e.get_attribute("data-arm") for e in browser.find_elements(By.CSS_SELECTOR, "#legend span")
    }
    assert arms == {"cmp-random", "cmp-other"}
    assert len(browser.find_elements(By.CSS_SELECTOR, "#arms tr")) == 2
    assert not browser.find_element(By.ID, "importance-table").is_displayed()  # asked for only
    browser.find_element(By.ID, "importance-compute").click()
    until(browser, lambda d: d.find_element(By.ID, "importance-table").is_displayed(), "importance")
    want = http.get(
        "/reports/compare", params={"names": ["cmp-random", "cmp-other"], "importance": "true"}
    ).json()["importance"]
    shown = {
        row.get_attribute("data-arm"): [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        for row in browser.find_elements(By.CSS_SELECTOR, "#importance-rows tr")
    }
    figures = next(r for r in want if r["arm"] == "cmp-random")["importance"]
    assert text(browser, "importance-head") == "ARM JOBS USED x y"  # names as spelled
    assert shown["cmp-random"] == [
        "cmp-random",
        "10",
        *(f"{math.floor(100 * figures[n] + 0.5)}%" for n in "xy"),
    ]
    assert shown["cmp-other"] == ["cmp-other", "3", "3 completed jobs, fewer than the 10 it needs"]
    screenshot(browser, "dashboard-compare.png")

    browser.get(f"{server.url}/ui/tuning-jobs/no-such-job")
    until(browser, lambda d: "404" in text(d, "error"), "the page to say the job is unknown")
    assert script_errors(browser) == []

    browser.find_element(By.ID, "logout").click()
    until(browser, lambda d: "/ui/login" in d.current_url, "the login page after logging out")
    browser.get(f"{server.url}/ui/tuning-jobs/cmp-random")
    until(browser, lambda d: "/ui/login" in d.current_url, "the login page for a stored page")


def test_job_page_shows_where_early_stopping_can_cut(server, http, browser):
    from selenium.webdriver.common.by import By

    body = definition("fid", max_jobs=8, max_parallel_jobs=2)
    body["job_definition"]["static_hyperparameters"]["epochs"] = 3  # three steps per job
    assert http.post("/tuning-jobs", json=body).status_code == 201
    wait_status(http, "fid", {"Completed"}, timeout=120)
    want = http.get("/tuning-jobs/fid/fidelity").json()
    assert want["suggested_min_resource"] == 1  # the stand-in's curves never cross

    log_in(browser, f"{server.url}/ui/tuning-jobs/fid")
    panel = until(
        browser,
        lambda d: (p := d.find_element(By.ID, "fidelity")).is_displayed() and p,
        "the early-stopping panel",
    )
    rows = browser.find_elements(By.CSS_SELECTOR, "#fidelity-rows tr")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows] == ["1", "2", "3"]
    assert panel.get_attribute("data-suggested") == "1"
    assert "min_resource: 1" in text(browser, "fidelity-suggestion")
    assert "8 jobs that ran to the end" in text(browser, "fidelity-note")
    first = rows[0].find_elements(By.TAG_NAME, "td")
    assert [c.text for c in first] == ["1", "8", "1.00", "1.00"]
    assert "selected" in rows[0].get_attribute("class")  # the suggested step stands out
    browser.execute_script("arguments[0].scrollIntoView()", panel)
    screenshot(browser, "dashboard-fidelity.png")
    assert script_errors(browser) == []


def test_the_pages_number_format_keeps_digits_and_magnitudes(server, browser):
    """The pages showed a loss of 1200.4 as "12" (trailing zeros stripped from an integer part)
    and an accuracy of 0.999998 as "1" (four digits); objectives get six, more while six do
    not read back as the same number (0.9999996 was "1" at six), written as the CLI writes them."""
    browser.get(f"{server.url}/ui/login")
    shown = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        import("/ui/static/common.js").then((m) => done([
          m.fmtNumber(1200.4), m.fmtNumber(100.02), m.fmtNumber(0.5), m.fmtNumber(2.5e-5),
          m.fmtObjective(0.999998), m.fmtObjective(1200.4), m.fmtObjective(0.9999996),
          m.fmtObjective(0.5), m.fmtObjective(1 / 3), m.fmtObjective(1234567),
          m.fmtObjective(123456.5), m.fmtObjective(-2.5e-5), m.fmtObjective(1e20),
        ]), (e) => done(String(e)));"""
    )
    assert shown == [
        "1200", "100", "0.5", "2.500e-5", "0.999998", "1200.4", "0.9999996", "0.5", "0.3333333333",
        "1234567", "123456.5", "-2.5e-05", "1e+20",
    ]  # fmt: skip
    # objectives as the CLI writes them (tuner.summary.objective_text): it had "1.234567e+6"
    values = [1234567, 123456.5, -2.5e-5, 1e20]
    assert shown[-4:] == [objective_text(v) for v in values]
