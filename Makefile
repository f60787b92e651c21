# The README's commands. `make test` and (from the next issue) `make run` set everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Quiet, offline-friendly CDK: no Node end-of-life banner, no telemetry, no notices download.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export PYTHONPATH := $(CURDIR)

.PHONY: help install test unit handler infra lint typecheck openapi synth deploy destroy clean

help:
	@echo "make test      install everything, lint, type-check and run every test tier"
	@echo "make unit | handler | infra   one test tier"
	@echo "make synth     synthesize the stack (cdk.out/)"
	@echo "make deploy    cdk deploy to the AWS account of your credentials"
	@echo "make openapi   regenerate docs/openapi.json from the api models"

# The virtualenv is rebuilt when a requirements file changes.
$(BIN)/.installed: requirements.txt requirements-dev.txt functions/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(BIN)/.installed node_modules/.installed

test: install lint typecheck
	$(BIN)/python -m pytest

unit: $(BIN)/.installed
	$(BIN)/python -m pytest -m unit

handler: $(BIN)/.installed
	$(BIN)/python -m pytest -m handler

infra: install
	$(BIN)/python -m pytest -m infra

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/openapi.py --check

typecheck: $(BIN)/.installed
	$(BIN)/mypy functions infra local app.py scripts

openapi: $(BIN)/.installed
	$(BIN)/python scripts/openapi.py

synth: install
	PATH=$(CURDIR)/$(BIN):$$PATH npx cdk synth --no-notices

deploy: install
	PATH=$(CURDIR)/$(BIN):$$PATH npx cdk deploy --no-notices

destroy: install
	PATH=$(CURDIR)/$(BIN):$$PATH npx cdk destroy --no-notices

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache
