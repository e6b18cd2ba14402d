# The two commands README opens with (`make main`, `make test`), and what they need.
# Everything installs into .venv from a clean clone; Python 3.11+ is the only prerequisite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: main test lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

main: $(STAMP)
	$(VENV)/bin/tuner compare examples/quickstart.yaml

test: $(STAMP)
	$(VENV)/bin/pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/scheduler_overhead.py
	$(PY) bench/ask_latency.py
	$(PY) bench/api_load.py
	$(PY) bench/train_throughput.py

clean:
	rm -rf $(VENV) tuner-runs .pytest_cache .mypy_cache .ruff_cache
