# One-command set-up: `make demo` runs the demo, `make test` runs lint, types and tests.
# Both create a local virtual environment in .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench mutants clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	# torch's CPU build is only a test consumer of DLPack; its tests skip without it.
	$(PY) -m pip install --quiet torch==2.13.0 || echo "torch not installed: torch DLPack tests will skip"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m colbridge.demo

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

# the suite is mostly compiling kernels (numba, and g++ for the CUDA host shim): one
# worker per core
test: lint
	$(PY) -m pytest -n auto

bench: $(STAMP)
	$(PY) benchmarks/bridge.py
	$(PY) benchmarks/fused_cpu.py
	$(PY) benchmarks/first_compute.py

# Each mutant of tests/mutants/mutants.toml must be caught by the tests it names.
mutants: $(STAMP)
	$(PY) benchmarks/mutants.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
