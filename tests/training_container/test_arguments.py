"""Arguments the trainer refuses before it starts: exit 2, one line naming the rule and value."""

from __future__ import annotations

import pytest

from training_container.train import learning_rate_at, parse_args


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


@pytest.mark.parametrize("switch", ["--download", "--onnx", "--compile"])
def test_a_switch_takes_true_or_false_as_the_tuner_passes_booleans(capsys, switch):
    """QA: the example's advice ``download: true`` made every job fail: the tuner passes a
    boolean as ``--download true`` and the trainer knew only a bare ``--download``."""
    name = switch[2:]
    assert getattr(parse_args([switch]), name) is True
    assert getattr(parse_args([switch, "true"]), name) is True
    assert getattr(parse_args([switch, "False"]), name) is False
    assert getattr(parse_args([]), name) is False
    assert getattr(parse_args([switch, "--epochs", "2"]), name) is True
    assert f"argument {switch}: must be true or false, got 'maybe'" in refusal(
        capsys, switch, "maybe"
    )


def test_the_tuner_passes_a_boolean_hyperparameter_the_trainer_reads():
    from tuner.scheduler import training_argv

    argv = training_argv(["train"], {"download": True, "onnx": False}, {})
    assert argv[1:] == ["--download", "true", "--onnx", "false"]
    args = parse_args(argv[1:])
    assert args.download is True and args.onnx is False


def test_an_abbreviated_option_is_refused_not_taken_for_another(capsys):
    """QA: argparse took ``--mom 0.5`` for ``--momentum``, so a hyperparameter named ``mom``
    tuned the momentum without a word; ``--lr`` was taken for ``--lr_schedule``."""
    assert "unrecognized arguments: --mom 0.5" in refusal(capsys, "--mom", "0.5")
    assert "unrecognized arguments: --lr 0.1" in refusal(capsys, "--lr", "0.1")


def test_an_unknown_compile_mode_is_refused_before_anything_loads(capsys):
    """QA: it loaded the data, then crashed in torch.compile with exit 1."""
    line = refusal(capsys, "--compile", "--compile_mode", "bogus")
    assert "argument --compile_mode: invalid choice: 'bogus'" in line
    assert parse_args(["--compile_mode", "max-autotune"]).compile_mode == "max-autotune"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--print_freq", "-1"], "--print_freq must be >= 0 (0: never), got -1"),
        (["--validation_fraction", "1.5"], "between 0 and 1, got 1.5"),
        (["--validation_fraction", "nan"], "between 0 and 1, got nan"),
    ],
)
def test_other_values_out_of_range_are_refused_before_the_data_is_loaded(capsys, argv, message):
    """QA: a negative print_freq printed every batch; a validation fraction out of range was
    refused only after the data was loaded (a whole S3 download)."""
    assert message in refusal(capsys, *argv)


@pytest.mark.parametrize("warmup", [0.001, 0.01, 0.5, 1.5])
def test_warmup_never_raises_the_rate_above_its_base(warmup):
    """QA: a warmup shorter than one step multiplied the rate (0.01 epochs of 2 steps: 50x,
    and the run diverged); 1.5 epochs of 43 steps peaked at 1.008x."""
    args = parse_args(["--warmup_epochs", str(warmup), "--lr_schedule", "constant"])
    for steps in (2, 43):
        rates = [learning_rate_at(step, steps, args, 0.1) for step in range(steps * 3)]
        assert max(rates) == pytest.approx(0.1) and all(r <= 0.1 for r in rates)
