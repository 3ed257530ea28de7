# `make demo`, `make check`, `make test` and `make dist`. They build .venv with the standard library's venv when it is
# missing, broken or older than pyproject.toml, so a fresh clone needs only Python 3.11+. The demo installs ctxwin and
# its own dependencies only; check adds the `dev` extra (the fast tier skips the tests of extras that are absent);
# test adds every extra the whole suite, the benchmarks and mypy need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
CORE_STAMP := $(VENV)/.ctxwin-core
DEV_STAMP := $(VENV)/.ctxwin-dev
TEST_STAMP := $(VENV)/.ctxwin-test
EXTRAS ?= dev,bench,corpus,fit,plot,llama,qwen,mistral,hub,anthropic,gemini,openai-agents,pydantic-ai,google-adk,agent-framework,llama-index,litellm,fast
# Installed when the index has a build for this Python; their tests skip (saying why) when it does not.
OPTIONAL_EXTRAS ?= ray
# Byte-compiled modules and pytest's rewritten test modules are kept even where the shell turns that off: a second
# `make check` then starts its tests and subprocesses about twice as fast.
export PYTHONDONTWRITEBYTECODE :=
# A venv whose interpreter cannot import ctxwin (moved, broken, half-installed) is rebuilt.
VENV_OK := $(shell $(BIN)/python -c "import ctxwin" >/dev/null 2>&1 && echo ok)

.PHONY: demo check check-no-accelerators test bench dist readme clean FORCE

# ctxwin and its dependencies: all `make demo` needs.
$(CORE_STAMP): pyproject.toml setup.py ctxwin/counters/_approximate/speedups.c ctxwin/counters/_framing.c ctxwin/messages/_written.c ctxwin/trim/_pairscan.c ctxwin/strategies/_flagged.c ctxwin/recall/_termscan.c $(if $(VENV_OK),,FORCE)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "ctxwin needs Python 3.11+; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@$(BIN)/python -c '' >/dev/null 2>&1 || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(PIP) -e .
	@touch $@

# What the fast tier and ruff need (rebuilt with the core: it is older then).
$(DEV_STAMP): $(CORE_STAMP)
	$(PIP) -e '.[dev]'
	@touch $@

# Every extra the tests, the benchmarks and the linters need.
$(TEST_STAMP): $(DEV_STAMP)
	$(PIP) -e '.[$(EXTRAS)]'
	@$(PIP) -e '.[$(OPTIONAL_EXTRAS)]' || \
		echo "warning: could not install the optional extras '$(OPTIONAL_EXTRAS)'; their tests will be skipped" >&2
	@touch $@

# Fit a long English/Chinese agent session (tool calls, a 10,000-token build log) into a 6,000-token window.
demo: $(CORE_STAMP)
	@mkdir -p .demo
	$(BIN)/ctxwin fit examples/long_conversation.json --model gpt-4o-mini --context-window 6000 --reserve 1000 \
		--summarize -o .demo/fitted.json
	@echo "fitted conversation written to .demo/fitted.json"

# The fast tier: every layer, without the tests marked slow, on a worker per core (pytest-xdist): under a minute on 2
# cores (docs/architecture.md has the figures); then ruff. CHECK_WORKERS=0 runs it in one process.
CHECK_WORKERS ?= auto
check: $(DEV_STAMP)
	$(BIN)/python -m pytest -m "not slow" -n $(CHECK_WORKERS)
	$(BIN)/ruff check ctxwin tests benchmarks examples

# The fast tier again with the C accelerators turned off (their loaders honour CTXWIN_NO_ACCELERATOR): the
# pure-Python code every machine without a compiler runs.
check-no-accelerators: $(DEV_STAMP)
	CTXWIN_NO_ACCELERATOR=1 $(BIN)/python -m pytest -m "not slow" -n $(CHECK_WORKERS)

# The whole suite (CI runs this), the fast tier again without the C accelerators, then ruff and mypy.
test: $(TEST_STAMP)
	$(BIN)/python -m pytest
	CTXWIN_NO_ACCELERATOR=1 $(BIN)/python -m pytest -m "not slow" -n $(CHECK_WORKERS)
	$(BIN)/ruff check ctxwin tests benchmarks examples
	$(BIN)/mypy --strict ctxwin

# Every pytest-benchmark suite (the files are bench_*.py, so they are named: pytest only collects test_*.py by
# default), then the tables and chart of benchmarks/README.md from that run.
bench: $(TEST_STAMP)
	@mkdir -p .benchmarks
	$(BIN)/python -m pytest benchmarks/bench_*.py --benchmark-only --benchmark-json=.benchmarks/latest.json
	$(BIN)/python benchmarks/render.py .benchmarks/latest.json

# A wheel and an sdist in dist/ (the wheel holds the C accelerators where a compiler is found): install the wheel into
# any project with `pip install dist/ctxwin-*.whl`.
dist: $(CORE_STAMP)
	$(PIP) build
	rm -rf dist build
	$(BIN)/python -m build --outdir dist .
	@ls dist

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks .demo *.egg-info dist build

FORCE:
