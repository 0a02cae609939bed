# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# torch must come first, pinned: its CPU wheel is what sentence-transformers should get.
TORCH := torch==2.13.0
# llama.cpp is compiled from source for the judge tests: portable flags, cached by pip. pip's
# wheel cache ignores CMAKE_ARGS, so a wheel it once built with native flags would come back:
# .ci/llama_cpp_check.py runs one completion (a second) and rebuilds it only if that crashes.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: demo test test-fast lint typecheck install install-dev bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# The stamp files make a second `make` skip the install unless pyproject.toml changed.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e ".[dev]"
	$(BIN)/python .ci/llama_cpp_check.py --rebuild
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/ragmeter demo

lint: install-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports

typecheck: install-dev
	$(BIN)/mypy

test: install-dev lint typecheck
	$(BIN)/python -m pytest --durations=20

# Everything but the tests that start real infrastructure (PostgreSQL, Chromium, Ray,
# llama.cpp, dense models, subprocess servers): an answer in minutes while you work.
test-fast: install-dev
	$(BIN)/python -m pytest -m "not slow" -n auto --durations=20

bench: install-dev
	$(PIP) install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/metrics_speed.py

clean:
	rm -rf $(VENV) .ragmeter .pytest_cache .mypy_cache .ruff_cache
