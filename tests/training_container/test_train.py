"""The trainer as the tuner runs it: a real process, arguments in, classic log lines out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from tuner import ContinuousParameter, HyperparameterTuner
from tuner.metrics import MetricDefinition, parse_log

CLASSIC = MetricDefinition("validation-accuracy", r"validation: accuracy=([0-9\.]+)")
TRAINING_LOSS = MetricDefinition("training-loss", r"training: accuracy=\S+ loss=([0-9.]+)")
STARTUP = MetricDefinition("startup", r"startup: seconds=([0-9.]+) imports=")
FAST = ["--stem", "imagenet", "--batch_size", "16", "--threads", "2"]


def train(*args: str, env: dict | None = None, timeout: int = 300):
    return subprocess.run(
        [sys.executable, "-m", "training_container.train", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_a_short_run_prints_lines_the_classic_regex_reads(cifar_dir, tmp_path):
    out = tmp_path / "out"
    run = train(
        "--data_dir",
        str(cifar_dir),
        "--epochs",
        "2",
        "--output_dir",
        str(out),
        "--print_freq",
        "2",
        *FAST,
    )
    assert run.returncode == 0, run.stderr
    points, _ = parse_log(run.stdout.encode(), [CLASSIC])
    assert len(points) == 2 and all(0 <= p.value <= 1 for p in points)
    assert "[Epoch 1] training: accuracy=" in run.stdout
    assert "[Epoch 0] throughput: images/s=" in run.stdout
    assert "[Epoch 0] batch 2/" in run.stdout
    startup = parse_log(run.stdout.encode(), [STARTUP])[0]
    assert len(startup) == 1 and 0 < startup[0].value < 300  # from the process's start
    assert "precision=fp32 memory_format=contiguous" in run.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert [e["epoch"] for e in metrics["epochs"]] == [0, 1]
    assert metrics["final"]["validation_accuracy"] == points[-1].value
    assert (out / "model.pt").stat().st_size > 1_000_000


def test_a_diverging_loss_ends_the_job_with_a_clear_message(cifar_dir, tmp_path):
    run = train(
        "--data_dir",
        str(cifar_dir),
        "--epochs",
        "3",
        "--learning_rate",
        "1e12",
        "--output_dir",
        str(tmp_path / "out"),
        *FAST,
    )
    assert run.returncode == 3
    assert "error: the training loss became" in run.stderr
    assert "learning_rate=1e+12" in run.stderr


def test_bad_arguments_and_missing_data_exit_2(tmp_path):
    run = train("--momentum", "1.5")
    assert run.returncode == 2 and "--momentum must be in [0, 1), got 1.5" in run.stderr
    for flag, value, message in [  # a traceback, a run at learning rate 0, a divergence
        ("--threads", "-1", "--threads must be >= 0 (0: torch's default), got -1"),
        ("--warmup_epochs", "inf", "--warmup_epochs must be >= 0 and finite, got inf"),
        ("--learning_rate", "inf", "--learning_rate must be > 0 and finite, got inf"),
    ]:
        run = train(flag, value)
        assert run.returncode == 2 and message in run.stderr, run.stderr
    run = train("--data_dir", str(tmp_path / "none"), "--epochs", "1", *FAST)
    assert run.returncode == 2 and "no CIFAR-10 python batches" in run.stderr


def test_a_restarted_job_resumes_after_its_last_epoch(cifar_dir, tmp_path):
    common = [
        "--data_dir",
        str(cifar_dir),
        "--checkpoint_dir",
        str(tmp_path / "ckpt"),
        "--output_dir",
        str(tmp_path / "out"),
        *FAST,
    ]
    first = train(*common, "--epochs", "1")
    assert first.returncode == 0, first.stderr
    second = train(*common, "--epochs", "2")
    assert second.returncode == 0, second.stderr
    assert "resuming from" in second.stdout and "after epoch 0" in second.stdout
    assert "[Epoch 0]" not in second.stdout and "[Epoch 1] validation" in second.stdout
    history = json.loads((tmp_path / "out" / "metrics.json").read_text())["epochs"]
    assert [e["epoch"] for e in history] == [0, 1]


def test_outputs_go_to_s3_and_onnx_is_exported(cifar_dir, s3):
    boto3.client("s3").create_bucket(Bucket="results")
    run = train(
        "--data_dir",
        str(cifar_dir),
        "--epochs",
        "1",
        "--output_dir",
        "s3://results/job-1",
        "--onnx",
        *FAST,
    )
    assert run.returncode == 0, run.stderr
    listed = boto3.client("s3").list_objects_v2(Bucket="results", Prefix="job-1/")
    keys = sorted(o["Key"] for o in listed["Contents"])
    assert keys == ["job-1/metrics.json", "job-1/model.onnx", "job-1/model.pt"]


def test_an_output_s3_cannot_take_is_one_line_and_leaves_no_staging(cifar_dir, s3, tmp_path):
    """A missing bucket ended a finished training in a traceback, and every S3 output left
    its staging folder (model.pt: 85 MB here) in /tmp."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    common = ["--data_dir", str(cifar_dir), "--epochs", "1", *FAST]
    run = train(*common, "--output_dir", "s3://no-such-bucket/out", env={"TMPDIR": str(temp)})
    assert run.returncode == 4, run.stderr
    assert "error: cannot write s3://no-such-bucket/out/metrics.json" in run.stderr
    assert "Traceback" not in run.stderr
    assert not list(temp.glob("trainer-out-*"))  # (torch keeps its compile cache there)


@pytest.mark.timeout(900)  # three epochs of ResNet-34 on a busy 2-core CPU
def test_a_short_digits_run_learns(tmp_path):
    run = train(
        "--dataset",
        "digits",
        "--epochs",
        "3",
        "--batch_size",
        "64",
        "--learning_rate",
        "0.05",
        "--stem",
        "imagenet",
        "--threads",
        "2",
        "--output_dir",
        str(tmp_path / "out"),
        timeout=880,
    )
    assert run.returncode == 0, run.stderr
    points, _ = parse_log(run.stdout.encode(), [CLASSIC])
    losses, _ = parse_log(run.stdout.encode(), [TRAINING_LOSS])
    # 3 epochs end between 0.24 and 0.51 over seeds 0-3 (chance is 0.1): a margin, not a coin
    assert points[-1].value > 0.2 and losses[-1].value < losses[0].value


def test_the_tuner_runs_the_trainer(cifar_dir, tmp_path):
    tuner = HyperparameterTuner(
        job_definition={
            "command": [sys.executable, "-m", "training_container.train"],
            "static_hyperparameters": {
                "data_dir": str(cifar_dir),
                "epochs": 1,
                "stem": "imagenet",
                "batch_size": 16,
                "threads": 1,
            },
            "output_path": str(tmp_path / "runs"),
            "working_directory": str(Path(__file__).resolve().parents[2]),
        },
        objective_metric_name="validation-accuracy",
        hyperparameter_ranges={
            "learning_rate": ContinuousParameter(0.001, 0.5, "Logarithmic"),
            "momentum": ContinuousParameter(0.0, 0.99),
            "wd": ContinuousParameter(0.0, 0.001),
        },
        metric_definitions=[CLASSIC.to_dict()],
        strategy="Random",
        max_jobs=2,
        max_parallel_jobs=2,
        random_seed=0,
        storage=f"sqlite:///{tmp_path / 'db.sqlite'}",
    )
    tuner.fit()
    jobs = tuner.training_jobs()
    assert [j.status.value for j in jobs] == ["Completed", "Completed"], jobs[0].failure_reason
    for job in jobs:
        assert (Path(job.workdir) / "output" / "model.pt").exists()  # TUNER_OUTPUT_DIR


def test_distributed_data_parallel_under_torchrun_on_the_cpu(cifar_dir, tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "training_container.train",
            "--data_dir",
            str(cifar_dir),
            "--epochs",
            "1",
            "--output_dir",
            str(tmp_path / "out"),
            "--stem",
            "imagenet",
            "--batch_size",
            "8",
            "--threads",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "world=2" in run.stdout
    assert run.stdout.count("[Epoch 0] validation: accuracy=") == 1  # rank 0 alone prints
    assert (tmp_path / "out" / "model.pt").exists()


def test_the_classic_example_runs_at_toy_scale(cifar_dir, tmp_path):
    """examples/cifar10_resnet34.yaml as it stands, shrunk: 1 epoch, small batches, no GPUs."""
    import yaml

    from tuner.comparison import ComparisonSpec, run_comparison

    root = Path(__file__).resolve().parents[2]
    data = yaml.safe_load((root / "examples" / "cifar10_resnet34.yaml").read_text())
    ComparisonSpec.parse(data)  # every arm valid as it stands, the Hyperband one included
    # Hyperband judges jobs at epochs 2, 6 and 18 of 50: it cannot shrink to 1 epoch.
    data["arms"] = [
        {**arm, "max_jobs": 2, "max_parallel_jobs": 1}
        for arm in data["arms"]
        if arm["strategy"] != "Hyperband"
    ]
    job = data["job_definition"]
    job["static_hyperparameters"].update(
        data_dir=str(cifar_dir), epochs=1, batch_size=16, warmup_epochs=0, threads=1
    )
    job.update(
        gpus=[], gpus_per_job=0, working_directory=str(root), output_path=str(tmp_path / "runs")
    )
    names = run_comparison(ComparisonSpec.parse(data), storage=f"sqlite:///{tmp_path / 'db'}")
    from tuner.storage import Store

    store = Store(f"sqlite:///{tmp_path / 'db'}")
    for name in names:
        jobs = store.list_training_jobs(name)
        assert [j.status.value for j in jobs] == ["Completed"] * 2, jobs[0].failure_reason
        assert all(len(store.metric_points(j.name, "images-per-second")) == 1 for j in jobs)
