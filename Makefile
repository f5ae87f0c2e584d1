# One command each: `make test` and `make run` set everything up on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# ali-ons, the real RocketMQ client the compat tests drive (skipped, with a reason, without npm)
COMPAT := tests/compat/js
COMPAT_STAMP := $(COMPAT)/node_modules/.installed
# every benchmark script (helpers common.py and rawecho.py are not run on their own)
BENCHES := $(filter-out common rawecho __init__,$(basename $(notdir $(wildcard benchmarks/*.py))))

.PHONY: setup test lint bench run clean

# (re)install when pyproject.toml changes; `pip install -e` is idempotent
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev,spark]'
	touch $(STAMP)

setup: $(STAMP)

$(COMPAT_STAMP): $(COMPAT)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(COMPAT) && npm ci --no-audit --no-fund && touch node_modules/.installed; \
	else echo "npm not found: the ali-ons compatibility tests will be skipped"; fi

lint: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# pytest exits 5 when it collects nothing: that fails too
test: lint $(COMPAT_STAMP)
	$(PY) -m pytest

# a local cluster without Docker: namesrv :9876, broker-a :10911, broker-b :10921, data in ./data
run: $(STAMP)
	$(PY) deploy/run_local.py

bench: $(STAMP)
	@for f in $(BENCHES); do echo "== $$f"; $(PY) -m benchmarks.$$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
