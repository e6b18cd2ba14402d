"""Tiny datasets in the exact CIFAR-10 python layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from training_container.synthetic import write_cifar


@pytest.fixture
def cifar_dir(tmp_path: Path) -> Path:
    write_cifar(tmp_path / "data")
    return tmp_path / "data"
