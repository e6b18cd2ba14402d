"""Where the trainer writes its outputs (a folder that cannot take them is found early), and
how it ends when stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from torch import nn

from tests.training_container.conftest import upload_cifar
from training_container.train import (
    STOP_SIGNALS,
    OutputError,
    _sigterm,
    exit_on_sigterm,
    main,
    save_outputs,
    sigterm_deferred,
)

FAST = ["--stem", "imagenet", "--batch_size", "16", "--threads", "1"]


@pytest.mark.parametrize("where", ["file", "under a file"])
def test_an_output_dir_that_cannot_be_written_exits_4_before_training(tmp_path, where, capsys):
    """It crashed with a traceback after the whole training."""
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    output_dir = blocker if where == "file" else blocker / "out"
    argv = ["--dataset", "digits", "--stem", "imagenet", "--output_dir", str(output_dir)]
    assert main([*argv, "--epochs", "1"]) == 4
    out, err = capsys.readouterr()
    assert err.startswith(f"error: cannot write to --output_dir {output_dir}: ")
    assert err.count("\n") == 1 and "data:" not in out  # before loading anything


@pytest.mark.parametrize("where", ["file", "under a file"])
def test_a_checkpoint_dir_that_cannot_be_written_exits_4_before_training(tmp_path, where, capsys):
    """QA: it crashed with a traceback after the first epoch, at the first checkpoint."""
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    checkpoint_dir = blocker if where == "file" else blocker / "ckpt"
    argv = ["--dataset", "digits", "--stem", "imagenet", "--output_dir", str(tmp_path / "o")]
    assert main([*argv, "--checkpoint_dir", str(checkpoint_dir), "--epochs", "1"]) == 4
    out, err = capsys.readouterr()
    assert err.startswith(f"error: cannot write to --checkpoint_dir {checkpoint_dir}: ")
    assert err.count("\n") == 1 and "data:" not in out  # before loading anything


def test_a_late_write_failure_is_an_output_error(tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    with pytest.raises(OutputError, match=f"cannot write the outputs to {blocker / 'out'}"):
        save_outputs(str(blocker / "out"), nn.Linear(2, 2), [], False, None)  # type: ignore[arg-type]
    save_outputs(str(tmp_path / "fine"), nn.Linear(2, 2), [], False, None)  # type: ignore[arg-type]
    assert Path(tmp_path / "fine" / "model.pt").exists()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_ends_the_run_after_its_cleanup_so_downloaded_data_is_removed(
    cifar_dir, s3, tmp_path, stop
):
    """The tuner stops trials with SIGTERM, which skipped the atexit hook: every stopped
    trial left its copy of CIFAR-10 (178 MB) in /tmp. QA: the local launcher's wrapper also
    forwards SIGHUP (which left the copy too) and SIGINT (which printed a traceback)."""
    data = upload_cifar(cifar_dir, "data")
    temp = tmp_path / "tmp"
    temp.mkdir()
    argv = ["--data_dir", data, "--epochs", "50", "--output_dir", str(tmp_path / "o")]
    job = subprocess.Popen(
        [sys.executable, "-m", "training_container.train", *argv, *FAST],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(temp)},
    )
    assert job.stdout is not None and job.stderr is not None
    for line in job.stdout:
        if line.startswith("startup:"):
            assert list(temp.glob("cifar10-*"))  # downloaded, and training
            break
    job.send_signal(stop)
    assert job.wait(timeout=120) == -stop  # after its cleanup: it ends by the signal
    assert not list(temp.glob("cifar10-*"))
    assert "Traceback" not in job.stderr.read()


@pytest.fixture
def trainer_signals():
    """The trainer's stop handlers in this process for one test; afterwards pytest's own
    handlers for every stop signal again, and no signal remembered (or atexit would end
    pytest by it)."""
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    exit_on_sigterm()
    yield
    _sigterm.update(pending=False, received=0, deferring=False)
    for number, handler in previous.items():
        signal.signal(number, handler)


def test_a_checkpoint_write_holds_sigterm_until_it_is_done(tmp_path, trainer_signals):
    with pytest.raises(SystemExit) as exited, sigterm_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        (tmp_path / "written").write_text("whole")  # reached: the exit waits
    assert exited.value.code == 143 and (tmp_path / "written").read_text() == "whole"


def test_the_trainer_leaves_ignored_interrupts_ignored(trainer_signals):
    """Review: under nohup (SIGHUP ignored) or as a shell's background job (SIGINT ignored)
    the trainer took them over and died of a closed terminal."""
    for number in (signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    exit_on_sigterm()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)


def test_a_sigterm_while_the_model_is_written_waits_for_the_whole_file(
    tmp_path, monkeypatch, trainer_signals
):
    """A stop during the final model.pt write left half a file (only checkpoints waited)."""
    import torch

    real_save = torch.save

    def save_while_stopped(obj: object, path: Path) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        real_save(obj, path)

    monkeypatch.setattr(torch, "save", save_while_stopped)
    with pytest.raises(SystemExit) as exited:
        save_outputs(str(tmp_path / "out"), nn.Linear(2, 2), [], False, None)  # type: ignore[arg-type]
    assert exited.value.code == 143
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["metrics.json", "model.pt"]
    assert set(torch.load(tmp_path / "out" / "model.pt")) == {"weight", "bias"}


def test_the_onnx_model_takes_any_batch_of_standardised_images(tmp_path):
    """model.onnx took exactly one image (its input was fixed at 1 x 3 x 32 x 32)."""
    import numpy as np
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator

    from training_container.model import build_model

    model = build_model(10, "imagenet")
    save_outputs(str(tmp_path), model, [], True, torch.device("cpu"))
    graph = onnx.load(tmp_path / "model.onnx").graph
    (given,) = graph.input
    assert given.name == "images" and given.type.tensor_type.shape.dim[0].dim_param == "batch"
    images = np.random.default_rng(0).standard_normal((3, 3, 32, 32)).astype(np.float32)
    (logits,) = ReferenceEvaluator(str(tmp_path / "model.onnx")).run(None, {"images": images})
    with torch.no_grad():
        expected = model.eval()(torch.from_numpy(images)).numpy()
    assert logits.shape == (3, 10) and np.allclose(logits, expected, atol=1e-3)
