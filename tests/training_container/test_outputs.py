"""Where the trainer writes its outputs: a folder that cannot take them is found early."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch import nn

from training_container.train import OutputError, main, save_outputs


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


def test_a_late_write_failure_is_an_output_error(tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    with pytest.raises(OutputError, match=f"cannot write the outputs to {blocker / 'out'}"):
        save_outputs(str(blocker / "out"), nn.Linear(2, 2), [], False, None)  # type: ignore[arg-type]
    save_outputs(str(tmp_path / "fine"), nn.Linear(2, 2), [], False, None)  # type: ignore[arg-type]
    assert Path(tmp_path / "fine" / "model.pt").exists()
