#!/usr/bin/env bash
# Wheels of what bench/gpu_check.py needs beyond a GPU machine's own PyTorch image (numpy, scipy,
# scikit-learn, pandas, matplotlib, httpx, pyyaml, tqdm, onnx are already there), for a machine
# that cannot reach a package index: downloads them into DIR (default .whl) for CPython 3.12 on
# x86-64 Linux. There: pip install --no-index --no-deps --target /tmp/site DIR/*.whl, then
# PYTHONPATH=/tmp/site:$PWD python3 bench/gpu_check.py
set -euo pipefail
dir=${1:-.whl}
mkdir -p "$dir"
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$dir" \
  scikit-optimize pyaml optuna alembic Mako colorlog 'sqlalchemy>=2.0' greenlet \
  'pydantic>=2.6' pydantic-core annotated-types typing-inspection \
  boto3 botocore s3transfer jmespath
ls "$dir"
