"""Warm start through the REST service, in our shape and SageMaker's, on a real server."""

from __future__ import annotations

from tests.api.conftest import definition, wait_status
from tests.api.test_bad_definitions import to_sagemaker


def test_a_sagemaker_request_warm_starts_from_a_parent_created_over_rest(http):
    assert http.post("/tuning-jobs", json=definition(name="parent", max_jobs=4)).status_code == 201
    parent = wait_status(http, "parent", {"Completed"})
    warm = {"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"}
    request = to_sagemaker(definition(name="child", max_jobs=2, warm_start_config=warm))
    request["TrainingJobDefinition"]["StaticHyperParameters"] = {"sleep": 0.0, "epochs": 2}
    response = http.post("/tuning-jobs", json=request)
    assert response.status_code == 201, response.text
    assert response.json()["warm_start"]["parents"][0]["name"] == "parent"
    child = wait_status(http, "child", {"Completed"})
    assert child["definition"]["warm_start_config"] == warm
    assert child["warm_start"]["observations"] == 4
    assert child["warm_start"]["parents"] == [
        {
            "name": "parent",
            "succeeded": 4,
            "used": 4,
            "dropped": 0,
            "best": parent["best_training_job"]["objective"],
        }
    ]
    assert child["training_job_status_counters"]["Completed"] == 2  # max_jobs is the child's


def test_an_identical_child_with_other_static_hyperparameters_is_refused(http):
    assert http.post("/tuning-jobs", json=definition(name="parent", max_jobs=2)).status_code == 201
    wait_status(http, "parent", {"Completed"})
    warm = {"parents": ["parent"], "type": "IdenticalDataAndAlgorithm"}
    child = definition(name="child", max_jobs=2, warm_start_config=warm)
    child["job_definition"]["static_hyperparameters"]["epochs"] = 3
    response = http.post("/tuning-jobs", json=child)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "needs the same job_definition.static_hyperparameters as parent 'parent'" in detail
    assert "'epochs': '3'" in detail and "'epochs': '2'" in detail  # as argv words
    assert http.get("/tuning-jobs/child").status_code == 404


def test_a_sagemaker_parent_given_as_a_bare_name_is_refused_saying_so(http):
    """It was refused as '...HyperParameterTuningJobName must be a string, got 'parent''."""
    request = to_sagemaker(definition(name="child", max_jobs=2))
    request["WarmStartConfig"] = {
        "ParentHyperParameterTuningJobs": ["parent"],
        "WarmStartType": "TransferLearning",
    }
    response = http.post("/tuning-jobs", json=request)
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "WarmStartConfig.ParentHyperParameterTuningJobs[0] must be an object "
        "{\"HyperParameterTuningJobName\": ...}, got 'parent'"
    )
