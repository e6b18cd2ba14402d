"""How a program's end is worded as a training job's failure reason."""

import pytest

from tuner.failures import exit_reason


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (3, "exited with code 3"),
        (-6, "killed by signal 6 (SIGABRT)"),
        (-9, "killed by signal 9 (SIGKILL; the kernel's out-of-memory killer sends this one)"),
        (-200, "killed by signal 200"),  # no name this platform knows
    ],
)
def test_exit_reasons(code, reason):
    assert exit_reason(code) == reason


def test_the_same_start_failure_of_two_containers_is_one_group():
    """Each Docker start failure named its container: N failures, N groups of one."""
    from tuner.failures import failure_groups
    from tuner.records import ObjectiveStatus, TrainingJob, TrainingStatus

    def failed(number: int, container: str) -> TrainingJob:
        reason = f"cannot start 'python' for job t-00{number}: 500 Server Error: {container}"
        return TrainingJob(
            name=f"t-00{number}",
            tuning_job_name="t",
            number=number,
            status=TrainingStatus.FAILED,
            objective_status=ObjectiveStatus.FAILED,
            hyperparameters={},
            objective=None,
            failure_reason=reason,
            exit_code=None,
            handle=None,
            workdir=None,
            gpus=None,
            created_at=0.0,
            started_at=None,
            ended_at=None,
        )

    groups = failure_groups([failed(1, "a" * 64), failed(2, "b" * 64)])
    assert len(groups) == 1 and groups[0]["count"] == 2
