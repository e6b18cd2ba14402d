"""Several trials per GPU: total training throughput of 1, 2 and 4 concurrent small trials.

Each level is a real tuning job through the tuner: the local launcher with one GPU and
``gpus_per_job = 1/N`` (N trials share the GPU; each caps its memory at that fraction through
``TUNER_GPU_FRACTION``), N jobs all in parallel, each training ResNet-34 on the digits images
with the product's trainer. Every trainer prints ``throughput: images/s`` per epoch; a level's
figure is the sum over its trials of their median per-epoch throughput (the first epoch, with
cuDNN's autotuning, left out). The reference is the single trial, measured in the same run:
ratios above 1 mean packing small trials onto one GPU trains more images per second.

    python bench/gpu_packing.py [--levels 1 2 4 8] [--epochs 4] [--batch 256] [--json FILE]

Meant for a GPU machine; on a CPU it runs the same jobs (the fraction is then ignored), which
checks the mechanics but says nothing about GPUs.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tuner import ContinuousParameter, HyperparameterTuner

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUT = {"Name": "images-per-second", "Regex": r"throughput: images/s=([0-9.]+)"}
ACCURACY = {"Name": "validation-accuracy", "Regex": r"validation: accuracy=([0-9.]+)"}


def level(
    trials: int, epochs: int, batch: int, gpu: str, folder: Path, stem: str = "cifar"
) -> dict[str, float]:
    """Run ``trials`` concurrent trials sharing one GPU; their summed throughput."""
    tuner = HyperparameterTuner(
        job_definition={
            "command": [sys.executable, "-m", "training_container.train"],
            "static_hyperparameters": {
                "dataset": "digits",
                "epochs": epochs,
                "batch_size": batch,
                "stem": stem,
                "momentum": 0.9,
                "wd": 5e-4,
            },
            "working_directory": str(ROOT),
            "output_path": str(folder / "runs"),
            "gpus": [gpu],
            "gpus_per_job": 1 / trials,
        },
        objective_metric_name="validation-accuracy",
        hyperparameter_ranges={"learning_rate": ContinuousParameter(0.01, 0.1, "Logarithmic")},
        metric_definitions=[ACCURACY, THROUGHPUT],
        strategy="Random",
        max_jobs=trials,
        max_parallel_jobs=trials,
        random_seed=0,
        storage=f"sqlite:///{folder / 'bench.db'}",
        name=f"packing-{trials}",
    )
    began = time.perf_counter()
    tuner.fit()
    wall = time.perf_counter() - began
    total = 0.0
    for job in tuner.training_jobs():
        values = [p.value for p in tuner.store.metric_points(job.name, "images-per-second")]
        steady = [v for v in values[1:] if v is not None] or [v for v in values if v is not None]
        if not steady:
            raise SystemExit(f"{job.name} reported no throughput: {job.failure_reason}")
        total += statistics.median(steady)
    return {"trials": trials, "images_per_second": total, "wall_seconds": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--gpu", default="0", help="the GPU id the trials share")
    parser.add_argument("--stem", choices=["cifar", "imagenet"], default="cifar")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    try:
        import torch

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU only"
    except ImportError:
        device = "unknown"
    print(f"machine: {platform.node()} {device}; python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="gpu-packing-") as tmp:
        rows = [
            level(n, args.epochs, args.batch, args.gpu, Path(tmp), args.stem) for n in args.levels
        ]
    reference = rows[0]["images_per_second"]
    print(f"{'trials on one GPU':>18} {'total images/s':>15} {'vs 1 trial':>11} {'wall s':>8}")
    for row in rows:
        print(
            f"{row['trials']:>18} {row['images_per_second']:>15.1f} "
            f"{row['images_per_second'] / reference:>10.2f}x {row['wall_seconds']:>8.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"device": device, "levels": rows}))


if __name__ == "__main__":
    main()
