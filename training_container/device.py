"""Where the trainer runs, and the one place that sets up a CUDA device.

Every CUDA call goes through the ``cuda`` argument (``torch.cuda`` by default), so the tests on
a machine without a GPU check the exact calls with a stand-in that validates its arguments as
torch does. A CUDA device is always returned with its index: torch's per-device calls
(``set_per_process_memory_fraction``, ``set_device``) refuse a bare ``cuda``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import torch

GPU_FRACTION_VARIABLE = "TUNER_GPU_FRACTION"
AUTOTUNE_MIN_STEPS = 1000  # cuDNN autotuning costs seconds: worth it only on longer runs


class DeviceError(ValueError):
    """A device request or a GPU share that cannot be honoured; the message names the value."""


def choose_device(
    requested: str | None, local_rank: int = 0, world: int = 1, cuda: Any = torch.cuda
) -> torch.device:
    """``requested`` (``cpu``, ``cuda``, ``cuda:1``), or CUDA when available, else the CPU.

    A CUDA device without an index gets one: ``local_rank`` under ``torchrun`` with several
    processes, otherwise the current device. Raises ``DeviceError`` for any other name (``mps``,
    ``meta``, ``cpu:0``...) or a CUDA request on a machine without CUDA.
    """
    name = requested or ("cuda" if cuda.is_available() else "cpu")
    if not re.fullmatch(r"cpu|cuda(:[0-9]+)?", name):
        raise DeviceError(f"--device must be cpu, cuda or cuda:N, got {name!r}")
    device = torch.device(name)
    if device.type == "cpu":
        return device
    if not cuda.is_available():
        raise DeviceError(f"--device {name} asks for CUDA, and no CUDA device is available")
    if device.index is None:
        device = torch.device("cuda", local_rank if world > 1 else cuda.current_device())
    return device


def distributed_ranks(environ: Mapping[str, str] = os.environ) -> tuple[int, int, int]:
    """``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK`` as torchrun sets them (1, 0, 0 when absent).

    Raises ``DeviceError`` naming the variable unless the world is at least 1 and each rank
    is in 0..WORLD_SIZE-1."""
    values = {}
    for name, default in (("WORLD_SIZE", "1"), ("RANK", "0"), ("LOCAL_RANK", "0")):
        text = environ.get(name, default).strip()
        try:
            values[name] = int(text)
        except ValueError:
            raise DeviceError(f"{name} must be a whole number, got {text!r}") from None
    world, rank, local_rank = values["WORLD_SIZE"], values["RANK"], values["LOCAL_RANK"]
    if world < 1:
        raise DeviceError(f"WORLD_SIZE must be >= 1, got {world}")
    for name, rank_value in (("RANK", rank), ("LOCAL_RANK", local_rank)):
        if not 0 <= rank_value < world:
            raise DeviceError(
                f"{name} must be in 0..{world - 1} (WORLD_SIZE {world}), got {rank_value}"
            )
    return world, rank, local_rank


def gpu_fraction(environ: Mapping[str, str] = os.environ) -> float | None:
    """The share of one GPU this trial may use (``TUNER_GPU_FRACTION``), or None for all of it.

    Raises ``DeviceError`` unless the value is a number in (0, 1].
    """
    text = environ.get(GPU_FRACTION_VARIABLE, "").strip()
    if not text:
        return None
    try:
        share = float(text)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:
        raise DeviceError(f"{GPU_FRACTION_VARIABLE} must be a number in (0, 1], got {text!r}")
    return None if share == 1 else share


def should_autotune(choice: str, total_steps: int) -> bool:
    """cuDNN autotuning: ``on``, ``off``, or ``auto`` (on for runs of AUTOTUNE_MIN_STEPS steps)."""
    if choice == "auto":
        return total_steps >= AUTOTUNE_MIN_STEPS
    return choice == "on"


def configure_cuda(
    device: torch.device,
    memory_fraction: float | None,
    autotune: bool,
    cuda: Any = torch.cuda,
    backends: Any = torch.backends,
) -> None:
    """Make ``device`` (with its index) current, cap its memory at ``memory_fraction`` of the
    GPU (several trials share it), and set cuDNN autotuning. TF32 matmuls are allowed."""
    if device.type != "cuda" or device.index is None:
        raise DeviceError(f"configure_cuda needs a CUDA device with its index, got {device}")
    cuda.set_device(device)
    backends.cudnn.benchmark = autotune
    torch.set_float32_matmul_precision("high")
    if memory_fraction is not None:
        cuda.set_per_process_memory_fraction(memory_fraction, device)
