# Conveniences over the README's two commands (which need only Python 3.11+ and pip).
PY ?= python3
BIN := .venv/bin

.venv/.installed: pyproject.toml
	$(PY) -m venv .venv
	$(BIN)/python -m pip install -q -e ".[test,dev]"
	touch $@

.PHONY: run test lint bench
run: .venv/.installed
	$(BIN)/voicebudget run; s=$$?; [ $$s -le 1 ]   # exit 1 = over budget: a verdict, not an error

test: .venv/.installed
	$(BIN)/python -m pytest -q -n auto

lint: .venv/.installed
	$(BIN)/ruff check voicebudget tests benchmarks
	$(BIN)/ruff format --check voicebudget tests benchmarks
	$(BIN)/mypy
	$(BIN)/python .ci/complexity.py

bench: .venv/.installed
	$(BIN)/python benchmarks/bench_simulate.py
