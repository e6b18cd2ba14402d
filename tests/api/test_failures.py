"""Failure reasons over REST: where the counters are, the reasons are, grouped with counts."""

from __future__ import annotations

from tests.api.conftest import definition, wait_status


def test_a_tuning_job_whose_jobs_all_failed_is_failed_with_its_reasons(http):
    body = definition("all-fail")
    body["job_definition"]["static_hyperparameters"] = {"exit_code": 5}
    assert http.post("/tuning-jobs", json=body).status_code == 201
    done = wait_status(http, "all-fail", {"Completed", "Failed", "Stopped"})
    assert done["status"] == "Failed"
    assert done["status_reason"].startswith("no training job succeeded (4 of 4 failed): 4x")
    assert done["training_job_status_counters"]["Failed"] == 4
    [group] = done["failure_reasons"]
    assert group["count"] == 4 and group["reason"].startswith("exited with code 5")
    assert sorted(group["training_jobs"]) == [f"all-fail-00{i}" for i in range(1, 5)]
    listed = http.get("/tuning-jobs", params={"status": "Failed"}).json()["items"]
    assert [item["name"] for item in listed] == ["all-fail"]
