"""Train ResNet-34 on CIFAR-10 (or the digits) with SGD; the tuner's canonical training job.

Hyperparameters arrive as arguments (``--learning_rate --momentum --wd`` and the rest, all with
defaults). One line per epoch, in the classic format the classic regex reads unchanged:

    [Epoch 3] training: accuracy=0.8851 loss=0.4120
    [Epoch 3] validation: accuracy=0.8667 loss=0.4630
    [Epoch 3] throughput: images/s=5120.3

and, before the first step, ``startup: seconds=2.91 imports=2.10 data=0.35 model=0.21`` (from
the process's start; with ``--compile`` also ``compile: seconds=...``, the first step).

Exit codes: 0 finished (or stopped early by ``--patience``), 2 bad arguments or no data,
3 the loss became NaN or infinite (checked every ``CHECK_EVERY`` steps and at each epoch's end),
4 the outputs could not be written (a local ``--output_dir`` is checked before training).
Outputs in ``--output_dir`` (default ``$TUNER_OUTPUT_DIR`` or ``./output``; ``s3://`` uploads
them): ``model.pt``, ``metrics.json``, and ``model.onnx`` with ``--onnx``. With
``--checkpoint_dir``, every epoch is checkpointed and a restarted job resumes after its last
completed epoch, if its ``RUN_ARGUMENTS`` are those the checkpoint records (else exit 2).

On a GPU: bf16 autocast, channels_last, fused SGD, the dataset held on the GPU with
augmentation done there, the memory capped at ``TUNER_GPU_FRACTION`` of the GPU when trials
share it, cuDNN autotuning on runs long enough to repay it, ``--compile`` for torch.compile
(CUDA graphs by default; its cache is ``TORCHINDUCTOR_CACHE_DIR``, which the tuner shares
between the trials of a tuning job). Under ``torchrun`` with several processes:
DistributedDataParallel, each rank a shard of every epoch, the learning rate scaled by the
world size; rank 0 prints and saves.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import time

IMPORTED_AT = time.time()  # before the heavy imports, for the start-up line
_sigterm = {"deferring": False, "pending": False, "received": 0}


def _end_by_the_signal() -> None:
    """After a stop signal that ``exit_on_sigterm`` turned into an exit: end by that signal
    itself. Registered before the heavy imports, so atexit runs it after their exit hooks."""
    signum = _sigterm["received"]
    if signum:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


atexit.register(_end_by_the_signal)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from training_container.data import DataError, load  # noqa: E402
from training_container.device import (  # noqa: E402
    AUTOTUNE_MIN_STEPS,
    DeviceError,
    choose_device,
    configure_cuda,
    distributed_ranks,
    gpu_fraction,
    should_autotune,
)
from training_container.model import build_model  # noqa: E402
from training_container.step import (  # noqa: E402
    Normalizer,
    TrainStep,
    default_compile_mode,
    epoch_batches,
    make_optimizer,
    steps_per_epoch,
)

EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
EXIT_OUTPUT = 4  # trained, but the model could not be written to --output_dir
CHECK_EVERY = 50  # steps between checks for a NaN or infinite loss (each check waits for the GPU)
# What a checkpoint's run was trained with; a restart must give the same values. --epochs,
# --patience, --data_dir and the arguments of where and how it runs may change.
RUN_ARGUMENTS = (
    "learning_rate",
    "momentum",
    "wd",
    "batch_size",
    "warmup_epochs",
    "lr_schedule",
    "poly_power",
    "seed",
    "dataset",
    "validation_fraction",
    "stem",
)


def process_started_at() -> float:
    """When this process started (epoch seconds, to 10 ms), from /proc where there is one."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_after_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # stat field 22
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started_after_boot
        return min(time.time() - age, IMPORTED_AT)
    except (OSError, ValueError, IndexError, AttributeError):
        return IMPORTED_AT


def on_off(text: str) -> bool:
    """A switch's value given as a word: the tuner passes ``download: true`` as
    ``--download true``; a bare ``--download`` is on as well."""
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false, got {text!r}")


def add_switch(p: argparse.ArgumentParser, name: str, help: str) -> None:
    """``--name``, ``--name true`` or ``--name false``; off when absent."""
    p.add_argument(name, type=on_off, nargs="?", const=True, default=False, help=help)


# torch.compile's modes (torch/_inductor/list_mode_options)
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    # allow_abbrev off: a hyperparameter named "mom" or "lr" must not set --momentum or
    # --lr_schedule silently
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
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
    add_switch(p, "--download", "download CIFAR-10 if missing")
    p.add_argument("--validation_fraction", type=float, default=0.1)
    p.add_argument("--stem", choices=["cifar", "imagenet"], default="cifar")
    p.add_argument("--output_dir", default=os.environ.get("TUNER_OUTPUT_DIR", "output"))
    p.add_argument("--checkpoint_dir", default=None)
    add_switch(p, "--onnx", "also export model.onnx")
    add_switch(p, "--compile", "torch.compile the training step")
    p.add_argument(
        "--compile_mode",
        choices=COMPILE_MODES,
        default=None,
        help="torch.compile mode (default: reduce-overhead on a GPU, default on a CPU)",
    )
    p.add_argument(
        "--cudnn_benchmark",
        choices=["auto", "on", "off"],
        default="auto",
        help=f"cuDNN autotuning (auto: on for runs of at least {AUTOTUNE_MIN_STEPS} steps)",
    )
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if present)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    args = p.parse_args(argv)
    lr, warmup, power = args.learning_rate, args.warmup_epochs, args.poly_power
    checks = [
        (0 < lr < math.inf, f"--learning_rate must be > 0 and finite, got {lr}"),
        (0 <= args.momentum < 1, f"--momentum must be in [0, 1), got {args.momentum}"),
        (0 <= args.wd < math.inf, f"--wd must be >= 0 and finite, got {args.wd}"),
        (args.batch_size >= 1, f"--batch_size must be >= 1, got {args.batch_size}"),
        (args.epochs >= 1, f"--epochs must be >= 1, got {args.epochs}"),
        (0 <= warmup < math.inf, f"--warmup_epochs must be >= 0 and finite, got {warmup}"),
        (args.patience >= 0, f"--patience must be >= 0, got {args.patience}"),
        (args.print_freq >= 0, f"--print_freq must be >= 0 (0: never), got {args.print_freq}"),
        (
            0 < args.validation_fraction < 1,
            f"--validation_fraction must be between 0 and 1, got {args.validation_fraction}",
        ),
        (args.threads >= 0, f"--threads must be >= 0 (0: torch's default), got {args.threads}"),
        (0 <= args.seed < 2**32, f"--seed must be in 0..{2**32 - 1}, got {args.seed}"),
        (0 < args.poly_power < math.inf, f"--poly_power must be > 0 and finite, got {power}"),
        (
            not (args.checkpoint_dir or "").startswith("s3://"),
            f"--checkpoint_dir must be a local folder, got {args.checkpoint_dir}",
        ),
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
    if epoch < args.warmup_epochs:  # never above base, even for a warmup shorter than a step
        return base * min(1.0, (epoch + 1 / steps_per_epoch) / args.warmup_epochs)
    span = max(args.epochs - args.warmup_epochs, 1e-9)
    progress = min(1.0, (epoch - args.warmup_epochs) / span)
    if args.lr_schedule == "poly":
        return base * (1 - progress) ** args.poly_power
    if args.lr_schedule == "cosine":
        return base * 0.5 * (1 + math.cos(math.pi * progress))
    return base


def epoch_lines(record: dict[str, Any]) -> list[str]:
    """An epoch's metric lines, in the classic format the tuner's regexes read."""
    epoch = record["epoch"]
    return [
        f"[Epoch {epoch}] training: accuracy={record['train_accuracy']:.4f} "
        f"loss={record['train_loss']:.4f}",
        f"[Epoch {epoch}] validation: accuracy={record['validation_accuracy']:.4f} "
        f"loss={record['validation_loss']:.4f}",
        f"[Epoch {epoch}] throughput: images/s={record['images_per_second']:.1f}",
    ]


def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    normalize: Normalizer,
    batch_size: int,
    device: torch.device,
) -> tuple[float, float]:
    """(mean loss, accuracy) of ``model`` on ``x``; waits for the device once, at the end."""
    model.eval()
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    gpu = device.type == "cuda"
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=gpu):
        for start in range(0, len(x), batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            logits = model(normalize(xb))
            loss_sum += F.cross_entropy(logits.float(), yb, reduction="sum")
            correct += (logits.argmax(1) == yb).sum()
    return float(loss_sum) / max(1, len(x)), int(correct) / max(1, len(x))


def save_outputs(
    output_dir: str,
    model: nn.Module,
    history: list[dict[str, Any]],
    onnx: bool,
    device: torch.device,
) -> None:
    """Write model.pt, metrics.json (and model.onnx) locally or to an s3:// prefix."""
    s3 = output_dir.startswith("s3://")
    if s3:
        with tempfile.TemporaryDirectory(prefix="trainer-out-") as staging:  # removed after
            _write_outputs(Path(staging), model, history, onnx, device)
            _upload(Path(staging), output_dir)
    else:
        _write_outputs(Path(output_dir), model, history, onnx, device)


def prepare_output_dir(output_dir: str, option: str = "--output_dir") -> None:
    """Create a local ``output_dir`` and write a file there, so that a folder that cannot take
    the outputs (or, ``option`` ``--checkpoint_dir``, the checkpoints) is found before training
    (``OutputError``); an s3:// prefix is checked when written."""
    if output_dir.startswith("s3://"):
        return
    try:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=output_dir):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write to {option} {output_dir}: {first_line(exc)}") from None


def _write_outputs(
    local: Path, model: nn.Module, history: list[dict[str, Any]], onnx: bool, device: torch.device
) -> None:
    """Each file is written beside its place and renamed into it, so a stop or a kill never
    leaves half a file; a SIGTERM waits for model.pt and metrics.json (not for the export)."""
    metrics = json.dumps({"epochs": history, "final": history[-1] if history else None}, indent=1)
    try:
        local.mkdir(parents=True, exist_ok=True)
        with sigterm_deferred():
            _write_whole(local / "model.pt", lambda tmp: torch.save(model.state_dict(), tmp))
            _write_whole(local / "metrics.json", lambda tmp: tmp.write_text(metrics))
    except (OSError, RuntimeError) as exc:  # torch.save raises RuntimeError for a bad path
        raise OutputError(f"cannot write the outputs to {local}: {first_line(exc)}") from None
    if onnx:  # "images": N x 3 x 32 x 32, standardised (CIFAR_MEAN, CIFAR_STD); "logits": N x 10
        model.eval()
        example = torch.zeros(1, 3, 32, 32, device=device)
        _write_whole(
            local / "model.onnx",
            lambda tmp: torch.onnx.export(
                model,
                (example,),
                str(tmp),
                dynamo=False,
                input_names=["images"],
                output_names=["logits"],
                dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
            ),
        )


def _write_whole(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a temporary file beside ``path``, then rename it into place (removed if the
    write fails or is interrupted)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _upload(local: Path, output_dir: str) -> None:
    """Every file of ``local`` to the s3:// prefix ``output_dir``; ``OutputError`` naming the
    key when one cannot be written."""
    import boto3

    bucket, _, prefix = output_dir[len("s3://") :].partition("/")
    client = boto3.client("s3")
    for path in sorted(local.iterdir()):
        key = f"{prefix.rstrip('/')}/{path.name}" if prefix else path.name
        try:
            client.upload_file(str(path), bucket, key)
        except Exception as exc:  # boto3 raises many kinds; all mean "not written"
            raise OutputError(f"cannot write s3://{bucket}/{key}: {exc}") from None


class OutputError(RuntimeError):
    """The trained model could not be written where --output_dir says."""


class CheckpointError(ValueError):
    """A checkpoint this run cannot resume; the message names the file and the reason."""


def run_arguments(args: argparse.Namespace, world: int) -> dict[str, Any]:
    """What a checkpoint records and a restart must repeat: ``RUN_ARGUMENTS``, and the number
    of processes (``WORLD_SIZE``), which scales the learning rate and shards the data."""
    return {**{name: getattr(args, name) for name in RUN_ARGUMENTS}, "world_size": world}


def check_run_arguments(
    state: dict[str, Any], args: argparse.Namespace, world: int, path: Path
) -> None:
    """``CheckpointError`` naming every argument whose value differs from the checkpoint's;
    a checkpoint without its arguments is refused, as nothing shows it belongs to this run.
    One without ``world_size`` (written before it was recorded) is not checked for it."""
    stored = state.get("arguments")
    if not isinstance(stored, dict):
        raise CheckpointError(
            f"checkpoint {path} records no run arguments (written by an older trainer), so "
            "it may belong to another run; delete it to start afresh"
        )
    ours = run_arguments(args, world)
    differ = [
        f"--{name} {stored.get(name)!r} there, {ours[name]!r} here"
        for name in RUN_ARGUMENTS
        if stored.get(name) != ours[name]
    ]
    if stored.get("world_size", world) != world:
        differ.append(
            f"{stored['world_size']} processes (WORLD_SIZE) there, {world} here, which scales "
            "the learning rate"
        )
    if differ:
        raise CheckpointError(
            f"checkpoint {path} is of a run with other arguments: {'; '.join(differ)} "
            "(give the same values, or another --checkpoint_dir)"
        )


CHECKPOINT_KEYS = {"model", "optimizer", "epoch", "best_loss", "stale", "history"}


def resume(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    args: argparse.Namespace,
    world: int,
    device: torch.device,
) -> dict[str, Any]:
    """The checkpoint at ``path``, loaded into ``model`` and ``optimizer``.

    Raises ``CheckpointError`` (naming the file and the reason) for a file that cannot be read
    (empty, truncated, not a checkpoint), one of other arguments, one with more epochs done
    than ``--epochs``, or one whose weights do not fit the model.
    """
    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except Exception as exc:  # EOFError, RuntimeError, UnpicklingError...: all unreadable
        raise CheckpointError(f"cannot read checkpoint {path}: {first_line(exc)}") from None
    if not isinstance(state, dict) or not state.keys() >= CHECKPOINT_KEYS:
        raise CheckpointError(f"{path} is not a trainer checkpoint")
    check_run_arguments(state, args, world, path)
    if state["epoch"] + 1 > args.epochs:
        raise CheckpointError(
            f"--epochs {args.epochs} is fewer than the {state['epoch'] + 1} epochs "
            f"checkpoint {path} already completed"
        )
    try:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError, TypeError) as exc:
        reason = first_line(exc)
        raise CheckpointError(f"checkpoint {path} does not fit this model: {reason}") from None
    return state


def first_line(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


# The signals that stop a trial: SIGTERM from the tuner, SIGINT and SIGHUP as the local
# launcher's wrapper forwards them (Ctrl-C, a closed terminal).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def exit_on_sigterm() -> None:
    """Make SIGTERM (with which the tuner stops a trial), SIGINT and SIGHUP an exit that cleans
    up first (``finally`` blocks, and atexit's removal of data downloaded from s3://), without
    a traceback; then the process ends by that signal itself, so whoever watches it sees the
    signal, not an exit code. Inside ``sigterm_deferred`` the exit waits for the block's end.
    SIGINT and SIGHUP stay ignored where the process was started ignoring them (``nohup``, a
    shell's background job), as a program should."""

    def stop(signum: int, frame: Any) -> None:
        _sigterm["received"] = _sigterm["received"] or signum
        if _sigterm["deferring"]:
            _sigterm["pending"] = True
        else:
            raise SystemExit(128 + signum)

    for signum in STOP_SIGNALS:
        if signum == signal.SIGTERM or signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, stop)


@contextmanager
def sigterm_deferred() -> Iterator[None]:
    """A stop signal (``STOP_SIGNALS``) during the block ends the process after it, so a
    checkpoint write is never left half-done (a signal mask would not do: torch's threads
    receive it as well)."""
    _sigterm["deferring"] = True
    try:
        yield
    finally:
        _sigterm["deferring"] = False
        if _sigterm["pending"]:
            raise SystemExit(128 + int(_sigterm["received"]))


def main(argv: list[str] | None = None) -> int:
    started_at = process_started_at()
    args = parse_args(argv)
    if args.onnx:
        try:
            import onnx  # noqa: F401 - torch's exporter needs it
        except ImportError:
            print("error: --onnx needs the onnx package (pip install onnx)", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        world, rank, local_rank = distributed_ranks(os.environ)
        device = choose_device(args.device, local_rank, world)
        share = gpu_fraction()
    except DeviceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if world > 1:
        import torch.distributed as dist

        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    say = print if rank == 0 else (lambda *a, **k: None)
    if args.threads:
        torch.set_num_threads(args.threads)
    if rank == 0:
        try:
            prepare_output_dir(args.output_dir)
            if args.checkpoint_dir:
                prepare_output_dir(args.checkpoint_dir, "--checkpoint_dir")
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_OUTPUT
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    imported = time.time()

    try:
        data = load(args.dataset, args.data_dir, args.validation_fraction, args.seed, args.download)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    steps = steps_per_epoch(len(data.x_train), args.batch_size, world)
    if device.type == "cuda":
        autotune = should_autotune(args.cudnn_benchmark, steps * args.epochs)
        configure_cuda(device, share, autotune)
    x_train = torch.from_numpy(data.x_train).to(device)
    y_train = torch.from_numpy(data.y_train).to(device)
    x_val = torch.from_numpy(data.x_val).to(device)
    y_val = torch.from_numpy(data.y_val).to(device)
    gpu = device.type == "cuda"
    say(
        f"data: {args.dataset} train={len(x_train)} validation={len(x_val)} "
        f"test={len(data.x_test)} device={device} world={world} "
        f"precision={'bf16' if gpu else 'fp32'} "
        f"memory_format={'channels_last' if gpu else 'contiguous'}",
        flush=True,
    )
    loaded = time.time()

    model: nn.Module = build_model(data.classes, args.stem).to(device)
    memory_format = torch.channels_last if gpu else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    base_lr = args.learning_rate * world
    optimizer = make_optimizer(model, base_lr, args.momentum, args.wd, device)
    history: list[dict[str, Any]] = []
    start_epoch, best_loss, stale = 0, math.inf, 0
    checkpoint = Path(args.checkpoint_dir) / "checkpoint.pt" if args.checkpoint_dir else None
    if checkpoint is not None and checkpoint.exists():
        try:
            state = resume(checkpoint, model, optimizer, args, world, device)
        except CheckpointError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        start_epoch, best_loss, stale = state["epoch"] + 1, state["best_loss"], state["stale"]
        history = state["history"]
        say(f"resuming from {checkpoint} after epoch {state['epoch']}", flush=True)
    if history and (start_epoch >= args.epochs or (args.patience and stale >= args.patience)):
        say(f"nothing left to train after epoch {start_epoch - 1}; its metrics again:")
        say("\n".join(epoch_lines(history[-1])), flush=True)
        end_epoch = start_epoch  # outputs only
    else:
        end_epoch = args.epochs
    train_model: nn.Module = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        train_model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    compile_mode = (args.compile_mode or default_compile_mode(device)) if args.compile else None
    train_step = TrainStep(train_model, optimizer, device, memory_format, compile_mode)
    normalize = Normalizer(device)
    generator = torch.Generator(device=device)
    built = time.time()
    say(
        f"startup: seconds={built - started_at:.2f} imports={imported - started_at:.2f} "
        f"data={loaded - imported:.2f} model={built - loaded:.2f}",
        flush=True,
    )
    for epoch in range(start_epoch, end_epoch):
        generator.manual_seed(args.seed * 1000 + epoch)
        train_model.train()
        totals = train_step.totals()
        began = time.perf_counter()
        batches = epoch_batches(x_train, y_train, generator, args.batch_size, rank, world)
        for step, (images, labels) in enumerate(batches):
            lr = learning_rate_at(epoch * steps + step, steps, args, base_lr)
            train_step(images, labels, lr, totals)
            if compile_mode and epoch == start_epoch and step == 0:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                say(f"compile: seconds={time.perf_counter() - began:.2f}", flush=True)
            check_now = (step + 1) % CHECK_EVERY == 0 or step + 1 == steps
            if check_now and not totals.finite():
                value = float(totals.loss_sum)
                say(f"[Epoch {epoch}] training: loss={value} by batch {step + 1}", flush=True)
                print(
                    f"error: the training loss became {value} at epoch {epoch}, by batch "
                    f"{step + 1} (learning_rate={args.learning_rate:g}); stopping",
                    file=sys.stderr,
                    flush=True,
                )
                return EXIT_DIVERGED
            if args.print_freq and (step + 1) % args.print_freq == 0:
                say(
                    f"[Epoch {epoch}] batch {step + 1}/{steps} lr={lr:.5g} "
                    f"loss={float(totals.loss_sum) / max(1, totals.seen):.4f}",
                    flush=True,
                )
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - began
        train_loss, train_acc = totals.read()
        val_loss, val_acc = evaluate(model, x_val, y_val, normalize, 1024, device)
        record = {
            "epoch": epoch,
            "train_loss": train_loss,
            "train_accuracy": train_acc,
            "validation_loss": val_loss,
            "validation_accuracy": val_acc,
            "images_per_second": totals.seen * world / elapsed,
        }
        say("\n".join(epoch_lines(record)), flush=True)
        if not math.isfinite(val_loss):
            print(
                f"error: the validation loss became {val_loss} at epoch {epoch}; stopping",
                file=sys.stderr,
                flush=True,
            )
            return EXIT_DIVERGED
        history.append(record)
        stale = 0 if val_loss < best_loss else stale + 1
        best_loss = min(best_loss, val_loss)
        if checkpoint is not None and rank == 0:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            tmp = checkpoint.with_suffix(".tmp")
            with sigterm_deferred():
                torch.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "epoch": epoch,
                        "best_loss": best_loss,
                        "stale": stale,
                        "history": history,
                        "arguments": run_arguments(args, world),
                    },
                    tmp,
                )
                tmp.replace(checkpoint)
        if args.patience and stale >= args.patience:
            say(f"early stop: no lower validation loss in {args.patience} epochs", flush=True)
            break
    if rank == 0:
        try:
            save_outputs(args.output_dir, model, history, args.onnx, device)
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return EXIT_OUTPUT
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    exit_on_sigterm()
    sys.exit(main())
