# The two commands of the README:
#   make demo   — the quickstart on the embedded default (SQLite + eager Celery): no services needed
#   make test   — the whole test suite against PostgreSQL + Redis (started here when not running)
# Each creates .venv and installs the pinned requirements itself.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
REQS := requirements/base.txt requirements/test.txt requirements/lock.txt

# The test suite's services; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/adjudication
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: demo test test-fast lint venv services bench clean

$(VENV)/.installed: $(REQS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements/base.txt -r requirements/test.txt
	touch $@

venv: $(VENV)/.installed

# Where the UI is served: `make demo ADDRPORT=0.0.0.0:8001` (runserver's PORT or HOST:PORT).
ADDRPORT ?= 127.0.0.1:8000

demo: venv
	env -u DATABASE_URL -u CELERY_BROKER_URL -u REDIS_URL $(PY) manage.py quickstart --addrport $(ADDRPORT)

services:
	bash scripts/ensure-services.sh

# Lint first: a style or type error fails CI before twenty minutes of tests.
test: venv lint services
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) SECRET_KEY=test-only \
	  $(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# The pure-library tests (readers, the audit library): no services, about two minutes.
test-fast: venv
	$(PY) -m pytest -p no:django tests/readers $(PYTEST_ARGS)

bench: venv services
	for f in bench/*.py; do $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) var
