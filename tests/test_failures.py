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
