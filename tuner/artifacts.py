"""Uploading each training job's outputs to S3 (or an S3-compatible store) with boto3.

A job's folder holds ``log.txt`` and ``output/`` (the model, metrics files, anything the job
wrote to ``TUNER_OUTPUT_DIR``); both go to ``<uri>/<tuning job>/<training job>/`` under the same
relative paths. Credentials, region and endpoint come from boto3's usual configuration
(environment variables such as ``AWS_ACCESS_KEY_ID`` and ``AWS_ENDPOINT_URL_S3``, the shared
config and credentials files, ``AWS_PROFILE``); ``endpoint_url`` overrides the endpoint.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from tuner.errors import TunerError, ValidationError

UPLOADED = ("log.txt", "output")
UPLOAD_THREADS = 2


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` as (bucket, prefix without slashes at its ends)."""
    if not uri.startswith("s3://") or not uri[len("s3://") :].split("/", 1)[0]:
        raise ValidationError(f"an S3 location must look like s3://bucket/prefix, got {uri!r}")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    return bucket, prefix.strip("/")


class ArtifactUploader:
    """Uploads job folders under one ``s3://bucket/prefix`` (see the module docstring)."""

    def __init__(self, uri: str, endpoint_url: str | None = None) -> None:
        from tuner.extras import require

        require("boto3", "s3", "output_s3_uri (uploading job outputs)")
        self.bucket, self.prefix = split_s3_uri(uri)
        self.endpoint_url = endpoint_url
        self._client: Any = None

    def _s3(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("s3", endpoint_url=self.endpoint_url)
        return self._client

    def location(self, tuning_job: str, training_job: str) -> str:
        """The ``s3://`` prefix that holds one training job's outputs."""
        parts = [p for p in (self.prefix, tuning_job, training_job) if p]
        return f"s3://{self.bucket}/" + "/".join(parts) + "/"

    def upload(self, tuning_job: str, training_job: str, workdir: Path) -> str:
        """Upload the job's log and outputs; returns their ``s3://`` prefix.

        Raises ``TunerError`` naming the file and the reason when an upload fails.
        """
        from boto3.exceptions import Boto3Error
        from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

        location = self.location(tuning_job, training_job)
        key_prefix = location[len(f"s3://{self.bucket}/") :]
        files = []
        for name in UPLOADED:
            path = workdir / name
            if path.is_file():
                files.append(path)
            elif path.is_dir():
                files += sorted(p for p in path.rglob("*") if p.is_file())
        for path in files:
            key = key_prefix + path.relative_to(workdir).as_posix()
            try:
                self._s3().upload_file(str(path), self.bucket, key)
            except (Boto3Error, BotoCoreError, ClientError, OSError) as exc:
                raise TunerError(
                    f"cannot upload {path} to s3://{self.bucket}/{key}: {exc}"
                ) from exc
        return location


class BackgroundUploads:
    """``ArtifactUploader.upload`` calls on ``UPLOAD_THREADS`` daemon threads: a process that
    ends does not wait for an upload an unanswering endpoint holds up (its tuner records what
    was not uploaded, and a resume uploads it again)."""

    def __init__(self, uploader: ArtifactUploader) -> None:
        self.uploader = uploader
        self._work: queue.SimpleQueue[tuple[Future[str], str, str, Path] | None]
        self._work = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, tuning_job: str, training_job: str, workdir: Path) -> Future[str]:
        future: Future[str] = Future()
        self._work.put((future, tuning_job, training_job, workdir))
        if len(self._threads) < UPLOAD_THREADS:
            thread = threading.Thread(target=self._serve, name="upload", daemon=True)
            self._threads.append(thread)
            thread.start()
        return future

    def close(self) -> None:
        """Let the threads end once the uploads submitted so far are done."""
        for _ in self._threads:
            self._work.put(None)
        self._threads = []

    def _serve(self) -> None:
        while (work := self._work.get()) is not None:
            future, tuning_job, training_job, workdir = work
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self.uploader.upload(tuning_job, training_job, workdir))
            except BaseException as exc:  # handed to whoever reads the future
                future.set_exception(exc)
