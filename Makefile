# seqheur — two commands on a fresh machine: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := demo-out
PYTEST  := $(BIN)/python -m pytest
# The default suite is mostly numba compiling each engine specialisation once: pytest-xdist
# spreads it over every core (JOBS=1 runs it in one process).
JOBS    ?= $(shell nproc 2>/dev/null || echo 1)
XDIST   := $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist worksteal)

.PHONY: deadcode demo test test-slow test-oracle test-kernel test-lab test-dist test-fuzz test-all bench bench-quick profile lab lab-deps venv clean \
        lock upgrade-check min-check test-blas

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Installs come from the hashed lock (requirements/test.lock.txt: runtime deps, the test, dask
# and tune extras and the build backend, for Python 3.11 on linux x86-64), then seqheur itself without
# dependencies or build isolation, so nothing unpinned is fetched. `make lock` regenerates it.
LOCK       := requirements/test.lock.txt
BENCH_LOCK := requirements/bench.lock.txt

$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/python -m pip install -q --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	SEQHEUR_PROGRESS=1 $(BIN)/python -m seqheur.demo $(DEMO)

test: $(STAMP)
	$(PYTEST) -q $(XDIST)

# The float-heavy tests (disk model and its profiles, replay, sweep, reports, golden outputs)
# again under another CPU's BLAS kernels: numpy's OpenBLAS picks kernels by CPU and
# OPENBLAS_CORETYPE forces others (tools/blas_core.py picks Haswell, what an AMD EPYC runs, or
# Nehalem, and checks that OpenBLAS reports it in use). BLAS_CORE=Name forces a core type.
BLAS_TESTS := tests/test_disk_model.py tests/test_disk_bench.py tests/test_replay.py \
              tests/test_sweep.py tests/test_report.py tests/test_report_display.py \
              tests/test_metrics.py tests/test_golden.py tests/test_dataset.py tests/test_floatcmp.py
test-blas: $(STAMP)
	@core=$${BLAS_CORE:-$$($(BIN)/python tools/blas_core.py --pick)}; \
	OPENBLAS_CORETYPE=$$core $(BIN)/python tools/blas_core.py --expect $$core && \
	OPENBLAS_CORETYPE=$$core $(PYTEST) -q $(BLAS_TESTS)

# Heavier suites, each behind a marker; pytest's exit 5 (no test selected) is not a failure.
test-slow: $(STAMP)
	$(PYTEST) -q -m slow || [ $$? -eq 5 ]
test-oracle: $(STAMP)
	$(PYTEST) -q -m oracle || [ $$? -eq 5 ]
test-kernel: $(STAMP)
	$(PYTEST) -q -m kernel || [ $$? -eq 5 ]
test-lab: $(STAMP)
	$(PYTEST) -q -m lab || [ $$? -eq 5 ]
test-dist: $(STAMP)
	$(PYTEST) -q -m dist || [ $$? -eq 5 ]
test-fuzz: $(STAMP)
	$(PYTEST) -q -m fuzz || [ $$? -eq 5 ]
test-all: test test-slow test-oracle test-kernel test-dist test-fuzz

# The performance suite installs its peers: tshark and fio (Debian), dpkt and libcachesim (PyPI).
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) $(BENCH_LOCK)
	$(BIN)/python -m pip install -q --require-hashes -r $(BENCH_LOCK)
	@if [ "$$(id -u)" = 0 ] && { ! command -v tshark >/dev/null || ! command -v fio >/dev/null; }; then \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends tshark fio >/dev/null; \
	fi
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python bench/run.py

bench-quick: $(BENCH_STAMP)
	$(BIN)/python bench/run.py --quick

# Where the replay kernels spend their time (perf, from Debian's linux-perf).
profile: $(BENCH_STAMP)
	@command -v perf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq linux-perf
	$(BIN)/python bench/profile_kernels.py replay

# The capture lab (root): Debian packages, the lab's C clients, and the real captures in traces/.
LAB_PKGS   := nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils libnfs-dev tcpdump tshark gcc \
              iproute2 util-linux fuse3 libfuse3-dev pkg-config
LAB_TRACES := demo-v3 seq-v4 stride4-v3 random-v3 interleave4-v3 fuse-seq-ra128k-v3 \
              fuse-stride-ra1m-v3 fuse-random-ra1m-v3

lab-deps:
	@missing=$$(for p in $(LAB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq; \
	  for try in 1 2 3; do \
	    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
	      --no-install-recommends $$missing >/dev/null && break; \
	    echo "apt-get install failed (try $$try; another apt run?), retrying"; sleep 10; \
	  done; \
	fi

lab: $(STAMP) lab-deps
	$(BIN)/python -c 'from seqheur.lab.build import build_clients; print(build_clients())'
	rm -rf traces/.lab-new
	$(BIN)/seqheur lab run $(LAB_TRACES) -o traces/.lab-new
	rm -f traces/*.pcap.gz traces/*.manifest.json
	mv traces/.lab-new/*.pcap.gz traces/.lab-new/*.manifest.json traces/
	rmdir traces/.lab-new
	$(BIN)/python -m seqheur.lab.readme traces/

# -- the lock and its checks ------------------------------------------------------------------
# uv compiles the lock; it is installed from PyPI into a tools venv here, and only `make lock`
# needs it (installing from the lock needs pip alone). Regenerate after editing pyproject.toml.
CHECKS     := .venv-checks
UV_VERSION := 0.13.9
UV         := $(CHECKS)/tools/bin/uv
LOCK_OPTS  := --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --generate-hashes \
              --no-header --quiet -c requirements/constraints.txt

$(UV):
	$(PY) -m venv $(CHECKS)/tools
	$(CHECKS)/tools/bin/python -m pip install -q 'uv==$(UV_VERSION)'

# `make lock` keeps every pin that still satisfies pyproject.toml (adds, drops, moves only what
# an edit requires); `make lock UPGRADE=1` moves every pin to the newest allowed version.
lock: $(UV)
	$(UV) pip compile $(LOCK_OPTS) $(if $(UPGRADE),--upgrade) pyproject.toml requirements/build.in \
	  --extra test --extra dask --extra tune -o $(LOCK)
	$(UV) pip compile $(LOCK_OPTS) $(if $(UPGRADE),--upgrade) pyproject.toml requirements/build.in \
	  --extra test --extra dask --extra tune --extra bench -c $(LOCK) -o $(BENCH_LOCK)

# The newest versions pyproject.toml allows, unlocked, in a fresh venv: runs the default suite and
# says which tests broke and what was installed (exit 1 if any broke). CI runs it as a warning.
upgrade-check:
	$(PY) tools/depcheck.py upgrade --venv $(CHECKS)/upgrade

# The lowest versions pyproject.toml declares (uv's --resolution lowest-direct: direct deps at
# their `>=` bounds, transitive ones resolved against them), then the default suite once.
min-check: $(UV)
	$(PY) tools/depcheck.py min --venv $(CHECKS)/min --uv $(UV)

clean:
	rm -rf $(DEMO) bench/work .pytest_cache

# Dead code: vulture over src/ (tests and benchmarks count as users), reviewed false positives
# in vulture_whitelist.py (tests/test_deadcode.py runs the same check).
deadcode: $(STAMP)
	$(BIN)/python -m vulture src/seqheur tests bench vulture_whitelist.py --exclude bench/work \
	  --min-confidence 60
