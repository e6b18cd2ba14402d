"""Random images in the exact CIFAR-10 python layout (``cifar-10-batches-py``), for checks and
benchmarks on machines that cannot download the real data set."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from training_container.data import FILES


def write_cifar(folder: Path, per_batch: int = 20, seed: int = 0) -> Path:
    """``folder/cifar-10-batches-py`` with ``per_batch`` random images in each of the six batch
    files; every class appears in every batch, and image 0 of data_batch_1 is pure red."""
    rng = np.random.default_rng(seed)
    root = folder / "cifar-10-batches-py"
    root.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, per_batch)]
        labels[:10] = list(range(10))
        if name == "data_batch_1":
            data[0] = np.concatenate([np.full(1024, 255), np.zeros(2048)]).astype(np.uint8)
        batch = {
            b"batch_label": name.encode(),
            b"labels": labels,
            b"data": data,
            b"filenames": [f"{i}.png".encode() for i in range(per_batch)],
        }
        with open(root / name, "wb") as f:
            pickle.dump(batch, f)
    return root
