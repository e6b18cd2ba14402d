"""Training throughput of ResNet-34 (CIFAR stem, 32x32 images) on the available device.

Measures training steps (forward, backward, SGD update, with the trainer's own augmentation and
normalisation) at a given batch size, after warm-up steps, and reports images/s, FLOPs per
image (counted by torch's FlopCounterMode for one training step), the FLOP/s reached, and that
as a fraction of the device's peak. The peak is a reference measured side by side in the same
run: a large matrix multiply in the same precision (bf16 on a GPU, fp32 on a CPU).

    python bench/train_throughput.py [--batch 512] [--steps 20] [--compile]
"""

from __future__ import annotations

import argparse
import platform
import time

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from training_container.model import build_model
from training_container.train import Normalizer, augment


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None, help="default 512 on GPU, 32 on CPU")
    parser.add_argument("--steps", type=int, default=None, help="default 30 on GPU, 3 on CPU")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = device.type == "cuda"
    batch = args.batch or (512 if gpu else 32)
    steps = args.steps or (30 if gpu else 3)
    warmup = args.warmup if args.warmup is not None else (10 if gpu else 1)
    if gpu:
        torch.backends.cudnn.benchmark = True
    model = build_model(10, "cifar").to(device)
    memory_format = torch.channels_last if gpu else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    step_model = torch.compile(model) if args.compile else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    images = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    normalize, generator = Normalizer(device), torch.Generator(device=device)

    def step() -> None:
        x = normalize(augment(images, generator)).contiguous(memory_format=memory_format)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=gpu):
            loss = F.cross_entropy(step_model(x).float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    with FlopCounterMode(display=False) as counter:
        step()
    flops_per_image = counter.get_total_flops() / batch
    for _ in range(warmup):
        step()
    sync(device)
    began = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    images_per_s = batch * steps / (time.perf_counter() - began)
    peak = matmul_peak(device, torch.bfloat16 if gpu else torch.float32)
    name = torch.cuda.get_device_name(device) if gpu else platform.processor() or "CPU"
    print(
        f"device: {name} ({device.type}), torch {torch.__version__}, "
        f"{torch.get_num_threads()} CPU threads"
    )
    print(
        f"ResNet-34 (CIFAR stem), batch {batch}, {steps} steps after {warmup} warm-up"
        f"{', compiled' if args.compile else ''}"
    )
    print(f"  training throughput : {images_per_s:12.1f} images/s")
    print(f"  FLOPs per image     : {flops_per_image / 1e9:12.3f} GFLOP (forward+backward)")
    print(f"  reached             : {images_per_s * flops_per_image / 1e12:12.3f} TFLOP/s")
    print(
        f"  matmul reference    : {peak / 1e12:12.3f} TFLOP/s "
        f"({'bf16' if gpu else 'fp32'} {8192 if gpu else 2048}^3)"
    )
    print(f"  fraction of it      : {images_per_s * flops_per_image / peak:12.1%}")


if __name__ == "__main__":
    main()
