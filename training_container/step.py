"""The trainer's hot loop: augmentation, the optimizer, one training step; shared with
``bench/train_throughput.py`` so the benchmark measures exactly what the trainer runs.

Speed rules (each measured on an H100, see README): an epoch's images are augmented and
shuffled in a few large batched operations before its first step, so a step only slices; the
optimizer is SGD with its fused CUDA kernel on a GPU; a step never waits for the GPU (the loss
and the count of right answers are summed on the device and read by ``EpochTotals.read``); the
partial last batch is dropped, so every step has the same shapes (no recompilation, one CUDA
graph). ``compile_mode`` compiles normalisation, forward pass and loss together with
``torch.compile`` (on a GPU ``reduce-overhead`` by default: CUDA graphs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from training_container.data import CIFAR_MEAN, CIFAR_STD

AUGMENT_CHUNK = 8192  # images augmented per batched operation (bounds the index memory)


def augment(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random 32x32 crops of the 4-pixel zero-padded images, and random horizontal flips,
    done on whichever device holds the batch."""
    n, _, h, w = images.shape
    padded = F.pad(images, (4, 4, 4, 4))
    dy = torch.randint(0, 9, (n,), device=images.device, generator=generator)
    dx = torch.randint(0, 9, (n,), device=images.device, generator=generator)
    rows = (dy[:, None] + torch.arange(h, device=images.device)[None, :])[:, None, :, None]
    cols = (dx[:, None] + torch.arange(w, device=images.device)[None, :])[:, None, None, :]
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    channel = torch.arange(images.shape[1], device=images.device)[None, :, None, None]
    cropped = padded[batch, channel, rows, cols]
    flip = torch.rand(n, device=images.device, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], cropped.flip(3), cropped)


class Normalizer:
    """uint8 images to float, standardised per channel with CIFAR-10's mean and deviation."""

    def __init__(self, device: torch.device) -> None:
        std = torch.tensor(CIFAR_STD, device=device).view(1, 3, 1, 1)
        mean = torch.tensor(CIFAR_MEAN, device=device).view(1, 3, 1, 1)
        self.scale = 1 / (255 * std)
        self.shift = -mean / std

    def __call__(self, images_uint8: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.shift, images_uint8.float(), self.scale)


def make_optimizer(
    model: nn.Module, learning_rate: float, momentum: float, wd: float, device: torch.device
) -> torch.optim.SGD:
    """SGD with momentum; weight decay on weights only (not biases or batch-norm parameters);
    the fused kernel on a GPU (one launch for all parameters)."""
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, param in model.named_parameters():
        (no_decay if param.ndim <= 1 or name.endswith(".bias") else decay).append(param)
    return torch.optim.SGD(
        [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}],
        lr=learning_rate,
        momentum=momentum,
        fused=device.type == "cuda",
    )


def steps_per_epoch(images: int, batch_size: int, world: int = 1) -> int:
    """Full batches per epoch and rank (the partial last one is dropped), at least one."""
    return max(1, images // world // batch_size)


def epoch_batches(
    x: torch.Tensor,
    y: torch.Tensor,
    generator: torch.Generator,
    batch_size: int,
    rank: int = 0,
    world: int = 1,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of this rank's augmented batches in a fresh random order.

    Every rank gets the same number of full batches (``steps_per_epoch``); a dataset smaller
    than one batch is one batch.
    """
    order = torch.randperm(len(x), device=x.device, generator=generator)
    per_rank = max(1, len(x) // world)
    order = order[rank::world][:per_rank]
    steps = steps_per_epoch(len(x), batch_size, world)
    order = order[: steps * batch_size]
    images = torch.cat(
        [
            augment(x[order[i : i + AUGMENT_CHUNK]], generator)
            for i in range(0, len(order), AUGMENT_CHUNK)
        ]
    )
    labels = y[order]
    for step in range(steps):
        part = slice(step * batch_size, (step + 1) * batch_size)
        yield images[part], labels[part]


def default_compile_mode(device: torch.device) -> str:
    """CUDA graphs on a GPU (the launch overhead of small steps is what they remove)."""
    return "reduce-overhead" if device.type == "cuda" else "default"


@dataclass
class EpochTotals:
    """Loss and right answers of an epoch, summed on the device until read."""

    loss_sum: torch.Tensor
    correct: torch.Tensor
    seen: int = 0

    def read(self) -> tuple[float, float]:
        """(mean loss, accuracy) so far; waits for the device."""
        seen = max(1, self.seen)
        return float(self.loss_sum) / seen, int(self.correct) / seen

    def finite(self) -> bool:
        """False once any step's loss was NaN or infinite; waits for the device."""
        return math.isfinite(float(self.loss_sum))


class TrainStep:
    """Forward, backward and update of one batch; with ``compile_mode``, normalisation,
    forward and loss are one compiled function (``torch.compile(mode=compile_mode)``)."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device,
        memory_format: torch.memory_format,
        compile_mode: str | None = None,
    ) -> None:
        self.model, self.optimizer, self.device = model, optimizer, device
        self.memory_format = memory_format
        self.normalize = Normalizer(device)
        forward: Callable[..., Any] = self._forward
        if compile_mode:
            forward = torch.compile(self._forward, mode=compile_mode)
        self.forward = forward

    def _forward(
        self, images: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.normalize(images).contiguous(memory_format=self.memory_format)
        with torch.autocast(
            self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"
        ):
            logits = self.model(x)
        loss = F.cross_entropy(logits.float(), labels)
        return loss, (logits.argmax(1) == labels).sum()

    def totals(self) -> EpochTotals:
        zero = torch.zeros((), device=self.device)
        return EpochTotals(zero.clone(), zero.clone().long())

    def __call__(
        self, images: torch.Tensor, labels: torch.Tensor, learning_rate: float, totals: EpochTotals
    ) -> None:
        """One step at ``learning_rate``; adds its loss and right answers to ``totals``."""
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        loss, correct = self.forward(images, labels)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        totals.loss_sum += loss.detach() * len(labels)
        totals.correct += correct
        totals.seen += len(labels)
