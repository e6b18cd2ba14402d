"""Train ResNet-34 on CIFAR-10 (or the digits) with SGD; the tuner's canonical training job.

Hyperparameters arrive as arguments (``--learning_rate --momentum --wd`` and the rest, all with
defaults). One line per epoch, in the classic format the classic regex reads unchanged:

    [Epoch 3] training: accuracy=0.8851 loss=0.4120
    [Epoch 3] validation: accuracy=0.8667 loss=0.4630
    [Epoch 3] throughput: images/s=5120.3

Exit codes: 0 finished (or stopped early by ``--patience``), 2 bad arguments or no data,
3 the loss became NaN or infinite. Outputs in ``--output_dir`` (default ``$TUNER_OUTPUT_DIR``
or ``./output``; ``s3://`` uploads them): ``model.pt``, ``metrics.json``, and ``model.onnx``
with ``--onnx``. With ``--checkpoint_dir``, every epoch is checkpointed and a restarted job
resumes after its last completed epoch.

On a GPU: bf16 autocast, channels_last, the dataset held on the GPU with augmentation done
there, cudnn autotuning, ``--compile`` for torch.compile. Under ``torchrun`` with several
processes: DistributedDataParallel, each rank a shard of every epoch, the learning rate scaled
by the world size; rank 0 prints and saves.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from training_container.data import CIFAR_MEAN, CIFAR_STD, DataError, load
from training_container.model import build_model

EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--learning_rate", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--wd", type=float, default=5e-4, help="weight decay")
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--warmup_epochs", type=float, default=0.0)
    p.add_argument("--lr_schedule", choices=["constant", "poly", "cosine"], default="cosine")
    p.add_argument("--poly_power", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--patience",
        type=int,
        default=0,
        help="stop after this many epochs without a lower validation loss (0: never)",
    )
    p.add_argument("--print_freq", type=int, default=0, help="a progress line every N batches")
    p.add_argument("--dataset", choices=["cifar10", "digits"], default="cifar10")
    p.add_argument("--data_dir", default=os.environ.get("TUNER_DATA_DIR", "data"))
    p.add_argument("--download", action="store_true", help="download CIFAR-10 if missing")
    p.add_argument("--validation_fraction", type=float, default=0.1)
    p.add_argument("--stem", choices=["cifar", "imagenet"], default="cifar")
    p.add_argument("--output_dir", default=os.environ.get("TUNER_OUTPUT_DIR", "output"))
    p.add_argument("--checkpoint_dir", default=None)
    p.add_argument("--onnx", action="store_true", help="also export model.onnx")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if present)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    args = p.parse_args(argv)
    checks = [
        (args.learning_rate > 0, f"--learning_rate must be > 0, got {args.learning_rate}"),
        (0 <= args.momentum < 1, f"--momentum must be in [0, 1), got {args.momentum}"),
        (args.wd >= 0, f"--wd must be >= 0, got {args.wd}"),
        (args.batch_size >= 1, f"--batch_size must be >= 1, got {args.batch_size}"),
        (args.epochs >= 1, f"--epochs must be >= 1, got {args.epochs}"),
        (args.warmup_epochs >= 0, f"--warmup_epochs must be >= 0, got {args.warmup_epochs}"),
        (args.patience >= 0, f"--patience must be >= 0, got {args.patience}"),
    ]
    for ok, message in checks:
        if not ok:
            p.error(message)
    return args


def learning_rate_at(
    step: float, steps_per_epoch: int, args: argparse.Namespace, base: float
) -> float:
    """Linear warmup over ``warmup_epochs``, then constant, polynomial or cosine decay."""
    epoch = step / steps_per_epoch
    if epoch < args.warmup_epochs:
        return base * (epoch + 1 / steps_per_epoch) / args.warmup_epochs
    span = max(args.epochs - args.warmup_epochs, 1e-9)
    progress = min(1.0, (epoch - args.warmup_epochs) / span)
    if args.lr_schedule == "poly":
        return base * (1 - progress) ** args.poly_power
    if args.lr_schedule == "cosine":
        return base * 0.5 * (1 + math.cos(math.pi * progress))
    return base


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
    def __init__(self, device: torch.device) -> None:
        self.mean = torch.tensor(CIFAR_MEAN, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(CIFAR_STD, device=device).view(1, 3, 1, 1)

    def __call__(self, images_uint8: torch.Tensor) -> torch.Tensor:
        return (images_uint8.float() / 255 - self.mean) / self.std


def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    normalize: Normalizer,
    batch_size: int,
    autocast: Any,
) -> tuple[float, float]:
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            with autocast():
                logits = model(normalize(xb))
            loss_sum += float(F.cross_entropy(logits.float(), yb, reduction="sum"))
            correct += int((logits.argmax(1) == yb).sum())
    return loss_sum / max(1, len(x)), correct / max(1, len(x))


def save_outputs(
    output_dir: str,
    model: nn.Module,
    history: list[dict[str, Any]],
    onnx: bool,
    device: torch.device,
) -> None:
    """Write model.pt, metrics.json (and model.onnx) locally or to an s3:// prefix."""
    s3 = output_dir.startswith("s3://")
    local = Path(tempfile.mkdtemp(prefix="trainer-out-")) if s3 else Path(output_dir)
    local.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), local / "model.pt")
    (local / "metrics.json").write_text(
        json.dumps({"epochs": history, "final": history[-1] if history else None}, indent=1)
    )
    if onnx:
        model.eval()
        example = torch.zeros(1, 3, 32, 32, device=device)
        torch.onnx.export(model, (example,), str(local / "model.onnx"), dynamo=False)
    if s3:
        import boto3

        bucket, _, prefix = output_dir[len("s3://") :].partition("/")
        client = boto3.client("s3")
        for path in sorted(local.iterdir()):
            key = f"{prefix.rstrip('/')}/{path.name}" if prefix else path.name
            client.upload_file(str(path), bucket, key)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.onnx:
        try:
            import onnx  # noqa: F401 - torch's exporter needs it
        except ImportError:
            print("error: --onnx needs the onnx package (pip install onnx)", file=sys.stderr)
            return EXIT_BAD_INPUT
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if world > 1:
        import torch.distributed as dist

        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if device.type == "cuda":
            device = torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    say = print if rank == 0 else (lambda *a, **k: None)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        share = os.environ.get("TUNER_GPU_FRACTION")  # several trials share this GPU
        if share:
            torch.cuda.set_per_process_memory_fraction(float(share), device)

    try:
        data = load(args.dataset, args.data_dir, args.validation_fraction, args.seed, args.download)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    x_train = torch.from_numpy(data.x_train).to(device)
    y_train = torch.from_numpy(data.y_train).to(device)
    x_val = torch.from_numpy(data.x_val).to(device)
    y_val = torch.from_numpy(data.y_val).to(device)
    say(
        f"data: {args.dataset} train={len(x_train)} validation={len(x_val)} "
        f"test={len(data.x_test)} device={device} world={world}",
        flush=True,
    )

    model: nn.Module = build_model(data.classes, args.stem).to(device)
    memory_format = torch.channels_last if device.type == "cuda" else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    base_lr = args.learning_rate * world
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, param in model.named_parameters():
        (no_decay if param.ndim <= 1 or name.endswith(".bias") else decay).append(param)
    optimizer = torch.optim.SGD(
        [{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}],
        lr=base_lr,
        momentum=args.momentum,
    )
    history: list[dict[str, Any]] = []
    start_epoch, best_loss, stale = 0, math.inf, 0
    checkpoint = Path(args.checkpoint_dir) / "checkpoint.pt" if args.checkpoint_dir else None
    if checkpoint is not None and checkpoint.exists():
        state = torch.load(checkpoint, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch, best_loss, stale = state["epoch"] + 1, state["best_loss"], state["stale"]
        history = state["history"]
        say(f"resuming from {checkpoint} after epoch {state['epoch']}", flush=True)
    train_model: nn.Module = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        train_model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    if args.compile:
        train_model = torch.compile(train_model)  # type: ignore[assignment]

    def autocast() -> Any:
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")

    normalize = Normalizer(device)
    generator = torch.Generator(device=device)
    steps_per_epoch = max(1, math.ceil(len(x_train) / (args.batch_size * world)))
    for epoch in range(start_epoch, args.epochs):
        generator.manual_seed(args.seed * 1000 + epoch)
        order = torch.randperm(len(x_train), device=device, generator=generator)
        order = order[rank::world]
        train_model.train()
        seen, loss_sum, correct = 0, 0.0, 0
        began = time.perf_counter()
        for step in range(steps_per_epoch):
            idx = order[step * args.batch_size : (step + 1) * args.batch_size]
            if len(idx) == 0:
                continue
            lr = learning_rate_at(epoch * steps_per_epoch + step, steps_per_epoch, args, base_lr)
            for group in optimizer.param_groups:
                group["lr"] = lr
            images = normalize(augment(x_train[idx], generator))
            images = images.contiguous(memory_format=memory_format)
            with autocast():
                logits = train_model(images)
                loss = F.cross_entropy(logits.float(), y_train[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            value = float(loss.detach())
            if not math.isfinite(value):
                say(f"[Epoch {epoch}] training: loss={value} at batch {step}", flush=True)
                print(
                    f"error: the training loss became {value} at epoch {epoch}, batch {step} "
                    f"(learning_rate={args.learning_rate:g}); stopping",
                    file=sys.stderr,
                    flush=True,
                )
                return EXIT_DIVERGED
            seen += len(idx)
            loss_sum += value * len(idx)
            correct += int((logits.argmax(1) == y_train[idx]).sum())
            if args.print_freq and (step + 1) % args.print_freq == 0:
                say(
                    f"[Epoch {epoch}] batch {step + 1}/{steps_per_epoch} lr={lr:.5g} "
                    f"loss={value:.4f}",
                    flush=True,
                )
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - began
        val_loss, val_acc = evaluate(model, x_val, y_val, normalize, 1024, autocast)
        train_loss, train_acc = loss_sum / max(1, seen), correct / max(1, seen)
        throughput = seen * world / elapsed
        say(f"[Epoch {epoch}] training: accuracy={train_acc:.4f} loss={train_loss:.4f}")
        say(f"[Epoch {epoch}] validation: accuracy={val_acc:.4f} loss={val_loss:.4f}")
        say(f"[Epoch {epoch}] throughput: images/s={throughput:.1f}", flush=True)
        if not math.isfinite(val_loss):
            print(
                f"error: the validation loss became {val_loss} at epoch {epoch}; stopping",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_DIVERGED
        history.append(
            {
                "epoch": epoch,
                "train_loss": train_loss,
                "train_accuracy": train_acc,
                "validation_loss": val_loss,
                "validation_accuracy": val_acc,
                "images_per_second": throughput,
            }
        )
        stale = 0 if val_loss < best_loss else stale + 1
        best_loss = min(best_loss, val_loss)
        if checkpoint is not None and rank == 0:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            tmp = checkpoint.with_suffix(".tmp")
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "epoch": epoch,
                    "best_loss": best_loss,
                    "stale": stale,
                    "history": history,
                },
                tmp,
            )
            tmp.replace(checkpoint)
        if args.patience and stale >= args.patience:
            say(f"early stop: no lower validation loss in {args.patience} epochs", flush=True)
            break
    if rank == 0:
        save_outputs(args.output_dir, model, history, args.onnx, device)
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
