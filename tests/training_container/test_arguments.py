"""Arguments the trainer refuses before it starts: exit 2, one line naming the rule and value."""

from __future__ import annotations

import pytest

from training_container.train import parse_args


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The error line of arguments that must be refused with exit 2."""
    with pytest.raises(SystemExit) as exited:
        parse_args(list(argv))
    assert exited.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_numpy_cannot_take_is_refused(capsys, seed):
    """np.random.seed crashed with a traceback."""
    assert f"--seed must be in 0..4294967295, got {seed}" in refusal(capsys, "--seed", seed)
    assert parse_args(["--seed", str(2**32 - 1)]).seed == 2**32 - 1


@pytest.mark.parametrize("power", ["nan", "-1.0", "inf", "0.0"])
def test_a_poly_power_that_is_not_finite_and_positive_is_refused(capsys, power):
    """nan exited 3 as a divergence, a negative power made the rate grow, inf zeroed it."""
    message = f"--poly_power must be > 0 and finite, got {power}"
    assert message in refusal(capsys, "--poly_power", power)


def test_an_s3_checkpoint_dir_is_refused(capsys):
    """It silently created a local folder named s3:."""
    message = "--checkpoint_dir must be a local folder, got s3://bucket/ckpt"
    assert message in refusal(capsys, "--checkpoint_dir", "s3://bucket/ckpt")
