# The two commands: `make demo` and `make test`. Both build .venv with the standard library's venv
# when it is missing, broken or older than pyproject.toml, so a fresh clone needs only Python 3.11+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ctxwin-installed
EXTRAS ?= dev,bench
# A venv whose interpreter cannot import ctxwin (moved, broken, half-installed) is rebuilt.
VENV_OK := $(shell $(BIN)/python -c "import ctxwin" >/dev/null 2>&1 && echo ok)

.PHONY: demo test bench clean FORCE

$(STAMP): pyproject.toml $(if $(VENV_OK),,FORCE)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "ctxwin needs Python 3.11+; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@$(BIN)/python -c '' >/dev/null 2>&1 || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	@touch $@

demo: $(STAMP)
	$(BIN)/ctxwin count examples/conversation.json

test: $(STAMP)
	$(BIN)/python -m pytest
	$(BIN)/ruff check ctxwin tests benchmarks
	$(BIN)/mypy --strict ctxwin

bench: $(STAMP)
	$(BIN)/python -m pytest benchmarks --benchmark-only

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks *.egg-info

FORCE:
