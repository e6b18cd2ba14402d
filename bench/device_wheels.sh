#!/usr/bin/env bash
# Wheels of what bench/gpu_check.py needs beyond a GPU machine's own PyTorch image, for a machine
# that cannot reach a package index: downloads them into DIR (default .whl) for CPython 3.12 on
# x86-64 Linux. There: pip install --no-index --no-deps --target /tmp/site DIR/*.whl, then
# PYTHONPATH=/tmp/site:$PWD python3 bench/gpu_check.py
# Every core dependency in pyproject.toml is in one of the two lists below
# (tests/bench/test_gpu_check.py checks it, so a new dependency cannot be forgotten here).
set -euo pipefail
# Already on the PyTorch image the H100 of issue 12 ran (nothing to fetch):
on_image="numpy scipy scikit-learn threadpoolctl pandas matplotlib httpx pyyaml tqdm onnx"
# Fetched, with what they need that the image lacks:
wheels="scikit-optimize pyaml optuna alembic Mako colorlog sqlalchemy>=2.0 greenlet
  pydantic>=2.6 pydantic-core annotated-types typing-inspection
  boto3 botocore s3transfer jmespath google-re2"
dir=${1:-.whl}
mkdir -p "$dir"
# shellcheck disable=SC2086  # the lists are meant to split into words
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$dir" $wheels
echo "not fetched (on the image): $on_image"
ls "$dir"
