"""The trainer image runs the torch the project is tested with."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_trainer_image_pins_the_torch_and_torchvision_of_the_training_extra():
    """It was built on pytorch/pytorch:2.7.1 while the project pinned torch 2.14.1."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = dict(r.split("==") for r in extra["optional-dependencies"]["training"] if "==" in r)
    dockerfile = (ROOT / "training_container" / "Dockerfile").read_text()
    assert set(pinned) == {"torch", "torchvision"}
    for name, version in pinned.items():
        assert re.findall(rf"\b{name}==(\S+)", dockerfile) == [version]
    assert "FROM pytorch/pytorch" not in dockerfile  # its own torch would come first
