"""Restarting from a checkpoint: only the same run, never a corrupt or foreign file."""

from __future__ import annotations

import json
import re
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


def test_a_checkpoint_of_another_number_of_processes_is_refused(trained, checkpoint, capsys):
    """torchrun's WORLD_SIZE scales the learning rate: a run checkpointed on 2 processes went
    on with half its learning rate on 1."""
    path = checkpoint / "checkpoint.pt"
    state = torch.load(path, weights_only=False)
    assert state["arguments"]["world_size"] == 1
    state["arguments"]["world_size"] = 2
    torch.save(state, path)
    capsys.readouterr()
    assert run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 2
    assert (
        "2 processes (WORLD_SIZE) there, 1 here, which scales the learning rate"
        in capsys.readouterr().err
    )
    del state["arguments"]["world_size"]  # written before it was recorded: not checked
    torch.save(state, path)
    assert run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 0


def test_a_checkpoint_without_its_arguments_is_refused(trained, checkpoint, capsys):
    path = checkpoint / "checkpoint.pt"
    state = torch.load(path, weights_only=False)
    del state["arguments"]
    torch.save(state, path)
    capsys.readouterr()
    assert run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 2
    assert "records no run arguments" in capsys.readouterr().err


def test_a_finished_run_reports_its_last_epoch_again_and_writes_its_outputs(
    trained, checkpoint, tmp_path, capsys
):
    """A rerun of a finished run printed no epoch line: the tuner saw no objective."""
    history = torch.load(checkpoint / "checkpoint.pt", weights_only=False)["history"]
    capsys.readouterr()
    code = run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "1",
               "--output_dir", str(tmp_path / "again"))  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    record = history[-1]
    assert f"[Epoch 0] validation: accuracy={record['validation_accuracy']:.4f} " in out
    assert "[Epoch 0] training: accuracy=" in out and "[Epoch 0] throughput: images/s=" in out
    metrics = json.loads((tmp_path / "again" / "metrics.json").read_text())
    assert metrics["final"] == record and (tmp_path / "again" / "model.pt").exists()


def test_fewer_epochs_than_the_checkpoint_completed_are_refused(trained, checkpoint, capsys):
    path = checkpoint / "checkpoint.pt"
    state = torch.load(path, weights_only=False)
    state["epoch"] = 2  # as if it had completed 3
    torch.save(state, path)
    capsys.readouterr()
    assert run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 2
    assert f"--epochs 2 is fewer than the 3 epochs checkpoint {path}" in capsys.readouterr().err


def test_a_run_stopped_by_patience_stays_stopped(trained, checkpoint, capsys):
    """It resumed and trained more epochs."""
    path = checkpoint / "checkpoint.pt"
    state = torch.load(path, weights_only=False)
    state["stale"] = 1
    torch.save(state, path)
    capsys.readouterr()
    code = run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "3",
               "--patience", "1")  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "[Epoch 0] validation" in out and "[Epoch 1]" not in out


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("empty", "cannot read checkpoint .*checkpoint.pt: EOFError"),
        ("truncated", r"cannot read checkpoint .*checkpoint.pt: \w+Error"),
        ("not a checkpoint", "checkpoint.pt is not a trainer checkpoint"),
        ("other weights", "checkpoint .*checkpoint.pt does not fit this model: RuntimeError"),
    ],
)
def test_a_corrupt_or_incompatible_checkpoint_is_one_line_naming_it(
    trained, checkpoint, damage, reason, capsys
):
    """Each crashed with a traceback (exit 1)."""
    path = checkpoint / "checkpoint.pt"
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:5000])
    elif damage == "not a checkpoint":
        torch.save([1, 2, 3], path)
    else:  # as if written by a model of another stem, under the same recorded arguments
        state = torch.load(path, weights_only=False)
        state["model"]["conv1.weight"] = torch.zeros(64, 3, 3, 3)
        torch.save(state, path)
    capsys.readouterr()
    assert run(*trained[1], "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 2
    err = capsys.readouterr().err
    assert re.fullmatch(f"error: .*{reason}.*\n", err), err


def test_a_checkpoint_of_the_other_stem_is_refused(trained, checkpoint, capsys):
    common = [a if a != "imagenet" else "cifar" for a in trained[1]]
    capsys.readouterr()
    assert run(*common, "--checkpoint_dir", str(checkpoint), "--epochs", "2") == 2
    assert "--stem 'imagenet' there, 'cifar' here" in capsys.readouterr().err
