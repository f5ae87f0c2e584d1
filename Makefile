# One command each: `make test` and `make run` set everything up on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEPS   := $(VENV)/.dependencies
# ali-ons, the real RocketMQ client the compat tests drive (skipped, with a reason, without npm)
COMPAT := tests/compat/js
COMPAT_STAMP := $(COMPAT)/node_modules/.installed
# every benchmark script (helpers common.py, tls_common.py and rawecho.py are not run on their own;
# nor spark_common.py and tx_common.py; peers.py and peers_consume.py start other servers: `make bench-peers`;
# fuzz.py (and its fuzz_*.py) runs for many minutes: `python -m benchmarks.fuzz`)
BENCHES := $(filter-out common spark_common tx_common repl_common tls_common rawecho peers peers_consume fuzz fuzz_% __init__,$(basename $(notdir $(wildcard benchmarks/*.py))))

.PHONY: setup test lint bench run clean etcd

# the modules setup.py compiles with mypyc (its COMPILED list, one quoted path per line)
COMPILED := $(shell sed -n 's/^ *"\([a-z0-9_/]*\.py\)",$$/\1/p' setup.py)

# Two steps, each saying what it does. The dependencies (again when pyproject.toml changes):
# the first time pip downloads pyspark and friends (a few hundred MB) and shows its progress;
# aiorocketmq itself is installed pure here, in seconds.
$(DEPS): pyproject.toml
	@test -x $(PY) || { echo "== creating the virtual environment $(VENV) ($(PYTHON))"; $(PYTHON) -m venv $(VENV); }
	@echo "== installing the dependencies and tools into $(VENV): pip install -e '.[dev,spark,server,failover]'"
	AIOROCKETMQ_PURE=1 $(PY) -m pip install $(if $(wildcard $(DEPS)),-q,--progress-bar on) -e '.[dev,spark,server,failover]'
	@touch $(DEPS)

# Then aiorocketmq, its hot modules compiled (again when setup.py or a compiled module changes:
# an edited module never runs as its stale build; tests/conftest.py refuses to). pip hides a
# build's output unless -v: the full log goes to build/install.log, and only setup.py's own
# "aiorocketmq:" lines are shown -- each step of the compile, the files as they finish, how
# long it took. The last line says whether the hot modules run compiled.
$(STAMP): $(DEPS) setup.py $(COMPILED)
	@mkdir -p build
	@echo "== installing aiorocketmq into $(VENV), compiling its $(words $(COMPILED)) hot modules with mypyc (AIOROCKETMQ_PURE=1 or MYPYC=0 skips that)"
	@{ $(PY) -m pip install -v --no-deps -e . 2>&1; echo $$? > build/install.status; } \
		| tee build/install.log | grep --line-buffered '^ *aiorocketmq: '; \
	status=$$(cat build/install.status); \
	if [ "$$status" != 0 ]; then tail -n 30 build/install.log; echo "== pip failed (exit $$status); its whole output: build/install.log"; exit $$status; fi
	@touch $(STAMP)
	@echo "== $(VENV) is ready"
	@$(PY) -c 'import aiorocketmq.remoting.protocol.frame as m; print("== hot modules: " + ("compiled (mypyc)" if m.__file__.endswith(".so") else "pure Python, slower: no C compiler, mypyc failed, or AIOROCKETMQ_PURE / MYPYC=0 is set (the WARNING above, build/install.log)"))'

setup: $(STAMP) etcd

# etcd, the controller's store in the failover tests (tests/etcd.py starts its own on free ports;
# tests/failover drives etcdctl too): Debian's etcd-server and etcd-client, each when its command
# is missing, with apt-get as root (or sudo -n); where neither works, those tests are skipped,
# saying why. The package's own service is not what the tests use (Debian starts it on :2379
# where the init system lets it). Its lines go to stderr: stdout stays the steps of the install
# (tests/test_build.py reads them)
etcd:
	@pkgs="$$(command -v etcd >/dev/null 2>&1 || echo etcd-server) $$(command -v etcdctl >/dev/null 2>&1 || echo etcd-client)"; \
	pkgs=$$(echo $$pkgs); [ -z "$$pkgs" ] || { \
		if [ "$$(id -u)" = 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; \
		else echo "$$pkgs not installed, and not root: apt-get install $$pkgs, or the failover tests will be skipped"; exit 0; fi; \
		echo "== etcd for the failover tests: apt-get install $$pkgs"; \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q $$pkgs \
		|| { $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q $$pkgs; } \
		|| echo "apt-get could not install $$pkgs: the failover tests will be skipped"; } >&2

$(COMPAT_STAMP): $(COMPAT)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(COMPAT) && npm ci --no-audit --no-fund && touch node_modules/.installed; \
	else echo "npm not found: the ali-ons compatibility tests will be skipped"; fi

# mypy and lint-imports read the folders as aiorocketmq.<folder> through the link farm
# build/stage/aiorocketmq that setup.py makes (`make setup` again if it was removed)
lint: $(STAMP)
	@test -e build/stage/aiorocketmq/client || { rm -f $(STAMP); $(MAKE) --no-print-directory setup; }
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	cd build/stage && ../../$(VENV)/bin/lint-imports ../../pyproject.toml

# pytest exits 5 when it collects nothing: that fails too. The suite runs on TEST_WORKERS
# pytest-xdist workers (tests/units.py says how it is shared); TEST_WORKERS=0: in this process.
# Three on two cores: the tests wait on processes and sockets about half the time (9.3 min
# against 11.1 with two)
TEST_WORKERS ?= 3
test: lint $(COMPAT_STAMP) etcd
	$(PY) -m pytest -n $(TEST_WORKERS)

# a local cluster without Docker (mqcluster, deploy/launcher.py): namesrv :9876, broker-a :10911,
# broker-b :10921, data in ./data; launcher options after ARGS=, e.g. `make run ARGS="--slaves 1
# --sync"` for a slave per broker, `make run ARGS=--reset` to empty ./data, `make run
# ARGS=--failover` for etcd and a 3-replica group in controller mode (README "Failover")
run: $(STAMP)
	$(VENV)/bin/mqcluster $(ARGS)

bench: $(STAMP)
	@for f in $(BENCHES); do echo "== $$f"; $(PY) -m benchmarks.$$f || exit 1; done

# ours vs NATS JetStream and Redis Streams (apt-get installs nats-server/redis-server when
# missing); options after ARGS=, e.g. `make bench-peers ARGS=--quick`
.PHONY: bench-peers
bench-peers: $(STAMP)
	$(PY) -m pip install -q -e '.[peers]'
	$(PY) -m benchmarks.peers $(ARGS)

# containers (deploy/README.md). `make compose ARGS="up -d --build"` runs the Compose this host
# has -- v2's `docker compose`, else 1.29's `docker-compose` -- on deploy/docker-compose.yml;
# `make image` builds aiorocketmq:local alone; `make base-image` makes aiorocketmq-base:bookworm
# from Debian's packages (deploy/base-image.sh) where python:3.11-slim cannot be pulled. The
# image builds on AIOROCKETMQ_BASE: that local base once it exists, else python:3.11-slim
.PHONY: compose image base-image
COMPOSE = $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
AIOROCKETMQ_BASE ?= $(shell docker image inspect aiorocketmq-base:bookworm >/dev/null 2>&1 && echo aiorocketmq-base:bookworm || echo python:3.11-slim)
compose:
	AIOROCKETMQ_BASE=$(AIOROCKETMQ_BASE) $(COMPOSE) -f deploy/docker-compose.yml $(ARGS)

image:
	docker build -f deploy/Dockerfile --build-arg BASE=$(AIOROCKETMQ_BASE) -t aiorocketmq:local .

base-image:
	sh deploy/base-image.sh

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build
	find . -name '*.so' -not -path './$(VENV)/*' -not -path '*/node_modules/*' -delete
