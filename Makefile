# The two commands README opens with (`make main`, `make test`), and what they need.
# Everything installs into .venv from a clean clone; Python 3.11+ is the only prerequisite.
# `make main` installs the core package only (what the quickstart uses); `make test`, `make
# lint` and `make bench` add the `dev` extra (torch, the service, Docker, PostgreSQL, S3, the
# test and lint tools). --no-compile: Python compiles the modules a program imports when it
# first imports them, instead of pip compiling every module of every package up front (half
# the install time and 150 MB of the core install).
# Without bytecode caches every process re-compiles what it imports (sklearn and scipy: about
# 4 s of each training job), so Python must be allowed to write them even where the shell sets
# PYTHONDONTWRITEBYTECODE (this machine does): the empty value lets it.
export PYTHONDONTWRITEBYTECODE :=

VENV ?= .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.installed-core
DEV := $(VENV)/.installed-dev

.PHONY: main test lint bench clean

$(CORE): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -e .
	touch $@

$(DEV): $(CORE)
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	touch $@

main: $(CORE)
	$(VENV)/bin/tuner compare examples/quickstart.yaml

test: $(DEV)
	$(VENV)/bin/pytest -q

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(DEV)
	$(PY) bench/scheduler_overhead.py
	$(PY) bench/ask_latency.py
	$(PY) bench/api_load.py
	$(PY) bench/train_throughput.py
	$(PY) bench/dashboard_load.py
	$(PY) bench/tracking_overhead.py

clean:
	rm -rf $(VENV) tuner-runs .pytest_cache .mypy_cache .ruff_cache
