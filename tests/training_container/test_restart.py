"""Restarting from a checkpoint: only the same run, never a corrupt or foreign file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from training_container.synthetic import write_cifar
from training_container.train import main

FAST = ["--stem", "imagenet", "--batch_size", "16", "--threads", "2"]


def run(*argv: str) -> int:
    """``main`` in this process: its exit code (argparse's errors included)."""
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A checkpoint after 1 epoch, and the arguments that wrote it (but --epochs)."""
    root = tmp_path_factory.mktemp("trained")
    write_cifar(root / "data")
    common = ["--data_dir", str(root / "data"), "--output_dir", str(root / "out"), *FAST]
    assert run(*common, "--checkpoint_dir", str(root / "ckpt"), "--epochs", "1") == 0
    return root / "ckpt", common


@pytest.fixture
def checkpoint(trained: tuple[Path, list[str]], tmp_path: Path) -> Path:
    """A copy of the trained checkpoint's folder, for this test to change."""
    return Path(shutil.copytree(trained[0], tmp_path / "ckpt"))


def test_a_checkpoint_of_other_hyperparameters_is_refused_naming_each(trained, checkpoint, capsys):
    """It was resumed whatever the arguments, and the old momentum and wd won."""
    _, common = trained
    capsys.readouterr()
    code = run(*common, "--checkpoint_dir", str(checkpoint), "--epochs", "2",
               "--momentum", "0.5", "--wd", "0.001")  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"checkpoint {checkpoint / 'checkpoint.pt'} is of a run with other arguments" in err
    assert "--momentum 0.9 there, 0.5 here" in err and "--wd 0.0005 there, 0.001 here" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_a_restart_may_change_where_and_how_long_it_runs(trained, checkpoint, tmp_path, capsys):
    _, common = trained
    code = run(*common, "--checkpoint_dir", str(checkpoint), "--epochs", "2",
               "--output_dir", str(tmp_path / "elsewhere"), "--print_freq", "3",
               "--threads", "1", "--device", "cpu")  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "after epoch 0" in out and "[Epoch 1] validation" in out


def test_a_checkpoint_without_its_arguments_is_refused(trained, checkpoint, capsys):
    path = checkpoint / "checkpoint.pt"
    state = torch.load(path, weights_only=False)
    del state["arguments"]
    torch.save(state, path)
    capsys.readouterr()
    assert run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 2
    assert "records no run arguments" in capsys.readouterr().err
