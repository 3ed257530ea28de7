# The two commands: `make demo` and `make test`. Both build .venv with the standard library's venv
# when it is missing, broken or older than pyproject.toml, so a fresh clone needs only Python 3.11+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ctxwin-installed
EXTRAS ?= dev,bench,corpus,plot,llama,qwen,mistral,hub,anthropic,gemini
# Installed when the index has a build for this Python; their tests skip (saying why) when it does not.
OPTIONAL_EXTRAS ?= ray
# A venv whose interpreter cannot import ctxwin (moved, broken, half-installed) is rebuilt.
VENV_OK := $(shell $(BIN)/python -c "import ctxwin" >/dev/null 2>&1 && echo ok)

.PHONY: demo test bench clean FORCE

$(STAMP): pyproject.toml setup.py ctxwin/counters/approximate/speedups.c $(if $(VENV_OK),,FORCE)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "ctxwin needs Python 3.11+; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@$(BIN)/python -c '' >/dev/null 2>&1 || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(OPTIONAL_EXTRAS)]' || \
		echo "warning: could not install the optional extras '$(OPTIONAL_EXTRAS)'; their tests will be skipped" >&2
	@touch $@

# Fit a long English/Chinese agent session (tool calls, a 10,000-token build log) into a 6,000-token window.
demo: $(STAMP)
	@mkdir -p .demo
	$(BIN)/ctxwin fit examples/long_conversation.json --model gpt-4o-mini --context-window 6000 --reserve 1000 \
		--summarize -o .demo/fitted.json
	@echo "fitted conversation written to .demo/fitted.json"

test: $(STAMP)
	$(BIN)/python -m pytest
	$(BIN)/ruff check ctxwin tests benchmarks examples
	$(BIN)/mypy --strict ctxwin

# Every pytest-benchmark suite (the files are bench_*.py, so they are named: pytest only collects test_*.py by
# default), then the tables and chart of benchmarks/README.md from that run.
bench: $(STAMP)
	@mkdir -p .benchmarks
	$(BIN)/python -m pytest benchmarks/bench_*.py --benchmark-only --benchmark-json=.benchmarks/latest.json
	$(BIN)/python benchmarks/render.py .benchmarks/latest.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks *.egg-info

FORCE:
