"""The trainer's CUDA set-up, checked without a GPU: a stand-in for ``torch.cuda`` validates
each call's arguments with torch's own device-index rule, the rule that made every trial with
a fractional ``gpus_per_job`` die at start on a real H100."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch._utils import _get_device_index

from training_container.device import (
    AUTOTUNE_MIN_STEPS,
    DeviceError,
    choose_device,
    configure_cuda,
    distributed_ranks,
    gpu_fraction,
    should_autotune,
)


class RecordingCuda:
    """``torch.cuda`` as a machine with ``count`` GPUs would answer; records every call."""

    def __init__(self, count: int = 1, current: int = 0) -> None:
        self.count, self.current = count, current
        self.calls: list[tuple[str, Any]] = []

    def is_available(self) -> bool:
        return self.count > 0

    def current_device(self) -> int:
        return self.current

    def set_device(self, device: torch.device) -> None:
        index = _get_device_index(device)  # raises for a bare "cuda", as torch does
        self.calls.append(("set_device", index))

    def set_per_process_memory_fraction(self, fraction: float, device: Any = None) -> None:
        index = _get_device_index(device)  # raises for a bare "cuda", as torch does
        if not 0 <= fraction <= 1:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        self.calls.append(("memory_fraction", (fraction, index)))


def backends() -> SimpleNamespace:
    return SimpleNamespace(cudnn=SimpleNamespace(benchmark=False))


def test_the_stand_in_refuses_a_device_without_index_as_torch_does():
    with pytest.raises(ValueError, match="specified index"):
        RecordingCuda().set_per_process_memory_fraction(0.5, torch.device("cuda"))


@pytest.mark.parametrize(
    ("requested", "rank", "world", "current", "expected"),
    [
        (None, 0, 1, 0, "cuda:0"),
        ("cuda", 0, 1, 1, "cuda:1"),  # the current device (CUDA_VISIBLE_DEVICES decides)
        ("cuda", 3, 4, 0, "cuda:3"),  # torchrun: the local rank
        ("cuda:2", 0, 1, 0, "cuda:2"),
        ("cpu", 0, 1, 0, "cpu"),
    ],
)
def test_a_cuda_device_always_has_its_index(requested, rank, world, current, expected):
    cuda = RecordingCuda(count=4, current=current)
    assert choose_device(requested, rank, world, cuda) == torch.device(expected)


def test_without_cuda_the_cpu_is_chosen_and_a_cuda_request_is_refused():
    assert choose_device(None, cuda=RecordingCuda(count=0)) == torch.device("cpu")
    with pytest.raises(DeviceError, match="no CUDA device is available"):
        choose_device("cuda", cuda=RecordingCuda(count=0))
    with pytest.raises(DeviceError, match="got 'gpu'"):
        choose_device("gpu", cuda=RecordingCuda())


def test_a_shared_gpu_caps_the_memory_of_the_chosen_device():
    cuda = RecordingCuda(count=2, current=1)
    device = choose_device(None, cuda=cuda)
    flags = backends()
    configure_cuda(device, gpu_fraction({"TUNER_GPU_FRACTION": "0.25"}), True, cuda, flags)
    assert cuda.calls == [("set_device", 1), ("memory_fraction", (0.25, 1))]
    assert flags.cudnn.benchmark is True


def test_a_whole_gpu_sets_no_cap():
    cuda = RecordingCuda()
    configure_cuda(choose_device(None, cuda=cuda), gpu_fraction({}), False, cuda, backends())
    assert cuda.calls == [("set_device", 0)]
    assert gpu_fraction({"TUNER_GPU_FRACTION": "1"}) is None


def test_configure_refuses_a_device_without_index():
    with pytest.raises(DeviceError, match="with its index, got cuda"):
        configure_cuda(torch.device("cuda"), 0.5, False, RecordingCuda(), backends())


@pytest.mark.parametrize("text", ["0", "1.5", "-0.5", "half", "nan"])
def test_a_bad_gpu_share_is_refused_with_its_value(text):
    with pytest.raises(DeviceError, match=rf"in \(0, 1\], got '{text}'"):
        gpu_fraction({"TUNER_GPU_FRACTION": text})


def test_cudnn_autotuning_only_on_runs_long_enough_to_repay_it():
    assert not should_autotune("auto", AUTOTUNE_MIN_STEPS - 1)
    assert should_autotune("auto", AUTOTUNE_MIN_STEPS)
    assert should_autotune("on", 1) and not should_autotune("off", 10**6)


@pytest.mark.parametrize("name", ["mps", "meta", "xpu", "cpu:1", "cuda:x"])
def test_only_the_devices_the_help_names_are_accepted(name):
    """mps and meta passed and crashed later with a traceback."""
    with pytest.raises(DeviceError, match=f"--device must be cpu, cuda or cuda:N, got '{name}'"):
        choose_device(name, cuda=RecordingCuda())


def test_torchrun_ranks_default_to_one_process():
    assert distributed_ranks({}) == (1, 0, 0)
    assert distributed_ranks({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"}) == (4, 3, 1)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"WORLD_SIZE": "abc"}, "WORLD_SIZE must be a whole number, got 'abc'"),
        ({"WORLD_SIZE": "0"}, "WORLD_SIZE must be >= 1, got 0"),
        ({"WORLD_SIZE": "2", "RANK": "2"}, "RANK must be in 0..1 (WORLD_SIZE 2), got 2"),
        ({"LOCAL_RANK": "-1"}, "LOCAL_RANK must be in 0..0 (WORLD_SIZE 1), got -1"),
    ],
)
def test_torchrun_ranks_that_cannot_be_are_refused_naming_the_variable(environ, message):
    """QA: WORLD_SIZE=0 crashed with ZeroDivisionError, WORLD_SIZE=abc with a ValueError."""
    with pytest.raises(DeviceError) as refused:
        distributed_ranks(environ)
    assert str(refused.value) == message
