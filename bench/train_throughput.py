"""Training throughput of ResNet-34 (CIFAR stem, 32x32 images) on the available device.

Measures the trainer's own hot loop (``training_container/step.py``: an epoch's augmentation,
normalisation, forward, backward, fused SGD on a GPU) at a given batch size after warm-up
steps, eager and compiled side by side in one run (``--modes``), and reports images/s, FLOPs
per image (counted by torch's FlopCounterMode for one training step), the FLOP/s reached, and
that as a fraction of the device's peak. The peak is a reference measured in the same run: a
large matrix multiply in the same precision (bf16 on a GPU, fp32 on a CPU). Each mode's ratio
to eager is printed, and ``--json FILE`` writes the figures.

    python bench/train_throughput.py [--batch 512] [--steps 60] [--modes eager compiled]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from training_container.model import build_model
from training_container.step import (
    TrainStep,
    default_compile_mode,
    epoch_batches,
    make_optimizer,
)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device: torch.device, dtype: torch.dtype) -> float:
    """FLOP/s of a large square matrix multiply (the reference)."""
    n = 8192 if device.type == "cuda" else 2048
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    sync(device)
    reps = 20 if device.type == "cuda" else 3
    began = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - began)


def measure(
    device: torch.device, batch: int, steps: int, warmup: int, compile_mode: str | None
) -> dict[str, float]:
    """images/s of the trainer's step over ``steps`` steps after ``warmup`` (and its compile)."""
    gpu = device.type == "cuda"
    torch.manual_seed(0)
    model = build_model(10, "cifar").to(device)
    memory_format = torch.channels_last if gpu else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    optimizer = make_optimizer(model, 0.05, 0.9, 5e-4, device)
    step = TrainStep(model, optimizer, device, memory_format, compile_mode)
    n = batch * (steps + warmup)
    x = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, device=device)
    y = torch.randint(0, 10, (n,), device=device)
    generator = torch.Generator(device=device).manual_seed(0)
    totals = step.totals()
    began = time.perf_counter()
    batches = epoch_batches(x, y, generator, batch)
    for _ in range(warmup):
        step(*next(batches), 0.05, totals)
    sync(device)
    warm = time.perf_counter()
    for _ in range(steps):
        step(*next(batches), 0.05, totals)
    sync(device)
    done = time.perf_counter()
    if not totals.finite():
        raise SystemExit("the loss became NaN during the benchmark")
    return {"images_per_second": batch * steps / (done - warm), "warmup_seconds": warm - began}


def flops_per_image(device: torch.device, batch: int) -> float:
    """Forward+backward FLOPs of one image, counted on one eager step."""
    gpu = device.type == "cuda"
    model = build_model(10, "cifar").to(device)
    step = TrainStep(
        model,
        make_optimizer(model, 0.05, 0.9, 5e-4, device),
        device,
        torch.channels_last if gpu else torch.contiguous_format,
    )
    x = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    with FlopCounterMode(display=False) as counter:
        step(x, y, 0.05, step.totals())
    return float(counter.get_total_flops()) / batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None, help="default 512 on GPU, 32 on CPU")
    parser.add_argument("--steps", type=int, default=None, help="default 60 on GPU, 3 on CPU")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--modes", nargs="+", choices=["eager", "compiled"], default=["eager"])
    parser.add_argument("--compile_mode", default=None, help="default: the trainer's default")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.type == "cuda"
    batch = args.batch or (512 if gpu else 32)
    steps = args.steps or (60 if gpu else 3)
    warmup = args.warmup if args.warmup is not None else (15 if gpu else 1)
    if gpu:
        torch.backends.cudnn.benchmark = True
        torch.set_float32_matmul_precision("high")
    compile_mode = args.compile_mode or default_compile_mode(device)
    results = {
        mode: measure(device, batch, steps, warmup, compile_mode if mode == "compiled" else None)
        for mode in args.modes
    }
    per_image = flops_per_image(device, batch)
    peak = matmul_peak(device, torch.bfloat16 if gpu else torch.float32)
    name = torch.cuda.get_device_name(device) if gpu else platform.processor() or "CPU"
    print(
        f"device: {name} ({device.type}), torch {torch.__version__}, "
        f"{torch.get_num_threads()} CPU threads"
    )
    print(f"ResNet-34 (CIFAR stem), batch {batch}, {steps} steps after {warmup} warm-up")
    print(f"  FLOPs per image     : {per_image / 1e9:12.3f} GFLOP (forward+backward)")
    print(
        f"  matmul reference    : {peak / 1e12:12.3f} TFLOP/s "
        f"({'bf16' if gpu else 'fp32'} {8192 if gpu else 2048}^3)"
    )
    reference = results[args.modes[0]]["images_per_second"]
    for mode, figures in results.items():
        rate = figures["images_per_second"]
        label = f"{mode} ({compile_mode})" if mode == "compiled" else mode
        print(
            f"  {label:<28}: {rate:12.1f} images/s, {rate * per_image / 1e12:8.3f} TFLOP/s, "
            f"{rate * per_image / peak:6.1%} of the reference, "
            f"{rate / reference:5.2f}x {args.modes[0]}, warm-up {figures['warmup_seconds']:.1f} s"
        )
        figures["fraction_of_reference"] = rate * per_image / peak
    if args.json:
        args.json.write_text(
            json.dumps(
                {"device": name, "batch": batch, "gflop_per_image": per_image / 1e9, **results}
            )
        )


if __name__ == "__main__":
    main()
