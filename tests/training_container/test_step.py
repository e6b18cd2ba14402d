"""The trainer's hot loop on the CPU: batches, the optimizer, a step that never waits."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from training_container.data import CIFAR_MEAN, CIFAR_STD
from training_container.step import (
    Normalizer,
    TrainStep,
    epoch_batches,
    make_optimizer,
    steps_per_epoch,
)


def images(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.arange(n, dtype=torch.uint8).view(n, 1, 1, 1).expand(n, 3, 32, 32).contiguous()
    return x, torch.arange(n) % 10


def test_an_epoch_is_full_batches_of_every_image_at_most_once():
    x, y = images(70)
    generator = torch.Generator().manual_seed(0)
    batches = list(epoch_batches(x, y, generator, batch_size=16))
    assert steps_per_epoch(70, 16) == 4 and len(batches) == 4
    assert all(b.shape == (16, 3, 32, 32) and lab.shape == (16,) for b, lab in batches)
    # each image's centre pixel (its number) survives the crop; labels stay with their images
    seen = [int(b[i, 0, 16, 16]) for b, _ in batches for i in range(16)]
    assert len(set(seen)) == 64
    assert all(int(lab[i]) == int(b[i, 0, 16, 16]) % 10 for b, lab in batches for i in range(16))


def test_ranks_get_equal_disjoint_shards():
    x, y = images(70)
    shards = []
    for rank in range(3):
        generator = torch.Generator().manual_seed(5)  # every rank draws the same order
        batches = list(epoch_batches(x, y, generator, batch_size=8, rank=rank, world=3))
        shards.append({int(b[i, 0, 16, 16]) for b, _ in batches for i in range(len(b))})
        assert len(batches) == steps_per_epoch(70, 8, 3) == 2
    assert not (shards[0] & shards[1]) and not (shards[1] & shards[2])


def test_a_dataset_smaller_than_a_batch_is_one_batch():
    x, y = images(5)
    batches = list(epoch_batches(x, y, torch.Generator().manual_seed(0), batch_size=64))
    assert len(batches) == 1 and batches[0][0].shape[0] == 5


def test_the_normalizer_standardises_per_channel():
    x = torch.full((1, 3, 2, 2), 200, dtype=torch.uint8)
    out = Normalizer(torch.device("cpu"))(x)
    for c in range(3):
        expected = (200 / 255 - CIFAR_MEAN[c]) / CIFAR_STD[c]
        assert torch.allclose(out[0, c], torch.full((2, 2), expected), atol=1e-5)


def test_weight_decay_applies_to_weights_only():
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=True), nn.BatchNorm2d(4))
    optimizer = make_optimizer(model, 0.1, 0.9, 5e-4, torch.device("cpu"))
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 5e-4 and len(decay["params"]) == 1
    assert no_decay["weight_decay"] == 0.0 and len(no_decay["params"]) == 3
    assert not optimizer.defaults["fused"]  # the fused kernel is for the GPU


def test_a_step_learns_and_sums_its_loss_on_the_device():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
    device = torch.device("cpu")
    step = TrainStep(
        model, make_optimizer(model, 1e-3, 0.9, 0.0, device), device, torch.contiguous_format
    )
    x = torch.randint(0, 256, (32, 3, 32, 32), dtype=torch.uint8)
    y = torch.arange(32) % 10
    first, later = step.totals(), step.totals()
    step(x, y, 1e-3, first)
    for _ in range(20):
        later = step.totals()
        step(x, y, 1e-3, later)
    assert isinstance(first.loss_sum, torch.Tensor) and first.seen == 32
    (loss0, _), (loss1, acc1) = first.read(), later.read()
    assert loss1 < loss0 and acc1 > 0.5 and later.finite()
    diverged = step.totals()
    step(x, y, float("inf"), diverged)  # weights become NaN: the next loss is NaN
    step(x, y, 1e-3, diverged)
    assert not diverged.finite()


COMPILED_STEP = """
import json
import torch
from torch import nn
from training_container.step import TrainStep, make_optimizer

def run(mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    cpu = torch.device("cpu")
    step = TrainStep(model, make_optimizer(model, 0.01, 0.9, 0, cpu), cpu,
                     torch.contiguous_format, mode)
    x = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8,
                      generator=torch.Generator().manual_seed(1))
    y = torch.arange(16) % 10
    losses = []
    for _ in range(3):
        totals = step.totals()
        step(x, y, 0.01, totals)
        losses.append(totals.read()[0])
    return losses

print(json.dumps([run(None), run("default")]))
"""


@pytest.mark.timeout(1200)
def test_the_compiled_step_trains_as_the_eager_one_and_fills_the_given_cache(tmp_path):
    import json
    import os
    import subprocess
    import sys

    cache = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-c", COMPILED_STEP],
        capture_output=True,
        text=True,
        timeout=1100,
        env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    eager, compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert compiled == pytest.approx(eager, rel=1e-4)
    assert any(cache.rglob("*")), "torch.compile wrote nothing to TORCHINDUCTOR_CACHE_DIR"
