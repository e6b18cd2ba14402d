"""Tiny datasets in the exact CIFAR-10 python layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from training_container.synthetic import write_cifar


@pytest.fixture
def cifar_dir(tmp_path: Path) -> Path:
    write_cifar(tmp_path / "data")
    return tmp_path / "data"


def upload_cifar(folder: Path, bucket: str) -> str:
    """The CIFAR-10 batches in ``folder`` put in a new ``bucket`` (the current S3 endpoint);
    their s3:// prefix."""
    import boto3

    from training_container.data import FILES

    client = boto3.client("s3")
    client.create_bucket(Bucket=bucket)
    for name in FILES:
        client.upload_file(str(folder / "cifar-10-batches-py" / name), bucket, f"c/{name}")
    return f"s3://{bucket}/c"
