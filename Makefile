# Every target sets itself up: `make demo` and `make test` work from a fresh clone.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The Lambda runtime is python3.13; sam build needs the same Python on PATH.
PYTHON313 ?= $(shell ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.13*/bin/python3.13 2>/dev/null | tail -1 || true)
ifeq ($(PYTHON313),)
PYTHON313 := $(shell command -v python3.13)
endif
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo test slow conformance-aws coverage check lint typecheck cfn build deploy-test chaos bench bench-setup bench-latency bench-load-20k bench-otel clean deploy destroy lock prices screenshots docs

setup: $(STAMP)

# uv installs the dev lock in seconds, pip in minutes. The project brings uv itself: pip installs it
# into .venv from its own hashed lock (requirements-uv.txt). Where that fails (no uv wheel for this
# platform, say), or with `make setup INSTALLER=pip`, pip installs everything, as it always did.
INSTALLER ?= uv
PIP_INSTALL = $(BIN)/python -m pip install --quiet
# uv reads no pip.conf: it is told PyPI, no uv.toml of the machine's, and the one .venv. Where Python
# may not write bytecode (PYTHONDONTWRITEBYTECODE, as on CI), every process would compile each module
# it imports again: there uv compiles all 15,000 files once, as pip always does (most of a setup's
# CPU time); elsewhere Python compiles and keeps each module's the first time it is imported.
UV_INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python --no-config \
	--default-index https://pypi.org/simple $(if $(PYTHONDONTWRITEBYTECODE),--compile-bytecode)

# Your workflows packages (workflows/NAME/: the shop, triage, yours) importable by every command run
# with .venv's Python, as the functions import them deployed: the folder itself on the venv's path
# (a .pth file), so a workflow made later needs no install of its own.
WORKFLOWS_ON_PATH = $(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_path("purelib"), \
	"lockgate-workflows.pth").write_text(str(pathlib.Path("workflows").resolve()) + "\n")'

# The dev environment from its pinned, hashed lock (requirements-dev.txt, `make lock`), every file
# checked against its hash; then the two local packages, editable and without dependencies (the
# lock has them all), built by the lock's setuptools (no build environment fetched unhashed).
$(STAMP): pyproject.toml layers/core/pyproject.toml requirements-dev.txt requirements-uv.txt
	@test -n "$(PYTHON313)" || { echo "Python 3.13 not found: install it (e.g. pyenv install 3.13) or set PYTHON313=/path/to/python3.13"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON313) -m venv $(VENV)
	@test "$(INSTALLER)" != uv || $(PIP_INSTALL) --only-binary :all: --require-hashes -r requirements-uv.txt \
		2>$(VENV)/uv-install.log || echo "uv could not be installed ($(VENV)/uv-install.log says why): pip installs instead, in minutes"
	@if test "$(INSTALLER)" = uv && test -x $(BIN)/uv; then echo "uv installs requirements-dev.txt into $(VENV)"; \
		$(UV_INSTALL) --require-hashes -r requirements-dev.txt && $(UV_INSTALL) --no-build-isolation --no-deps -e layers/core -e .; \
	else echo "pip installs requirements-dev.txt into $(VENV)"; \
		$(PIP_INSTALL) --require-hashes -r requirements-dev.txt && $(PIP_INSTALL) --no-build-isolation --no-deps -e layers/core -e .; \
	fi
	@$(WORKFLOWS_ON_PATH)
	@touch $@

demo: $(STAMP)
	$(BIN)/lockgate demo

# The inner loop: every test but the slow suites, on every core. Branch coverage is recorded where it
# is reported (CI sets CI=true; `make check` sets COVER; or `make test COVER=1`), so `make check`
# adds the slow suites to it instead of running everything a second time; measuring it makes the
# suite about half as slow again, so the inner loop goes without.
# worksteal: an idle worker takes queued tests from a busy one, so one long module (the attack
# table) does not leave the other core idle at the end.
COVER ?= $(if $(CI),1,)
check: COVER := 1
COVERAGE_FLAGS = $(if $(COVER),--cov --cov-report= --cov-fail-under=0,)
# Examples per property test (tests/fuzz): a few in the inner loop, many where coverage is measured.
FUZZ_EXAMPLES ?= $(if $(COVER),150,25)
test: $(STAMP)
	LOCKGATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -m "not slow and not deploy" -n auto --dist worksteal $(COVERAGE_FLAGS)

# Coverage-guided fuzzing (atheris), chaos, load, the browser test, the benchmark smoke tests, the
# broadest attack runs (the attack table without defences), every whole-suite eval run and the
# sped-up-clock escalation: each runs once, here, appended to test's coverage.
slow: $(STAMP)
	$(BIN)/pytest -m "slow and not deploy" -n auto --dist worksteal --cov --cov-append --cov-report= --cov-fail-under=0

# The conformance suite (tests/conformance, part of `make test` against the embedded stack) against a
# real AWS account: `make conformance-aws PROFILE=name [REGION=eu-west-1]`. Each test creates and
# deletes its own small tables and queues. CONFORMANCE_ARGS passes more pytest options (e.g. -k).
PROFILE ?=
REGION ?=
CONFORMANCE_ARGS ?=
conformance-aws: $(STAMP)
	$(if $(PROFILE),,$(error make conformance-aws needs the AWS profile to test against, e.g. make conformance-aws PROFILE=dev (it creates and deletes small tables and queues there)))
	LOCKGATE_CONFORMANCE_PROFILE='$(PROFILE)' LOCKGATE_CONFORMANCE_REGION='$(REGION)' \
		$(BIN)/pytest tests/conformance -p no:randomly -n 4 $(CONFORMANCE_ARGS)

# Branch coverage of `make test` + `make slow`; fails below [tool.coverage.report] fail_under.
coverage: $(STAMP)
	$(BIN)/coverage report --skip-covered --show-missing

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check layers functions infra workflows

typecheck: $(STAMP)
	$(BIN)/mypy layers/core/lockgate infra/lockgate_infra $(patsubst %/__init__.py,%,$(wildcard workflows/*/__init__.py))
	@# Every handler is called app.py: check each on its own.
	@for app in functions/*/app.py; do echo "mypy $$app"; $(BIN)/mypy $$app || exit 1; done

# The docs site (docs/, mkdocs.yml): --strict fails on a broken link, a missing anchor or a page
# left out of the nav. Its reference pages are generated (python -m lockgate_infra.docsite).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

cfn: $(STAMP)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --template-file template.yaml

# Every gate, each test once. CI runs `make test`, then these targets but `test` (.ci/run).
check: lint typecheck cfn docs test slow coverage deploy-test

# sam build (no Docker: .venv's python3.13 is on PATH), sam package into moto's S3 and the real
# sam deploy to moto's CloudFormation, then the stack is checked (tests/deploy). ~2 minutes.
deploy-test: $(STAMP)
	$(BIN)/pytest -m deploy tests/deploy -W ignore::UserWarning

# Seeded fault injection with invariants (docs/testing.md, "Under faults"); short runs are in `make slow`,
# the MCP judge's own checks in `make test`. `make chaos MCP=1`: the tickets workflow and its MCP server.
SEEDS ?= 10
MCP ?=
chaos: $(STAMP)
	$(BIN)/python -m lockgate_infra.chaos --seeds $(SEEDS) $(if $(MCP),--mcp)

# Re-take the approval page's screenshots (docs/img/: the README's at 390 px and desktop, and
# docs/approvals.md's edit section) and the Slack stand-in's renderings of the message and its edit
# modal in headless Chromium (.ci/install-browser); the tests also check nothing scrolls sideways at
# 390 px, and that the edited refund is the one that runs.
screenshots: $(STAMP)
	LOCKGATE_UPDATE_SCREENSHOTS=1 $(BIN)/pytest tests/e2e/test_approval_browser.py tests/e2e/test_slack_screenshots.py -m browser -n 0 -p no:randomly -k screenshot

# Every benchmark, ratios against baselines measured in the same run → benchmarks/RESULTS.md.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

# `make setup` in fresh clones of HEAD, uv (cold and warm cache) vs pip alone: it needs PyPI and
# took 24 minutes on 2 busy cores, so it is not in `make bench`; it rewrites its own section.
bench-setup: $(STAMP)
	$(BIN)/python -m benchmarks.run_all --separate setup

# Latency from webhook receipt to the reply sent, steady and in 10x bursts, with modelled AWS and
# model latency (benchmarks/latency.py); long, so apart from `make bench`; rewrites its own section.
bench-latency: $(STAMP)
	$(BIN)/python -m benchmarks.run_all --separate latency

# The load run at 20,000 deliveries with faults and provider retries, one repeat (benchmarks/load.py);
# long, so apart from `make bench`; rewrites its own section.
bench-load-20k: $(STAMP)
	$(BIN)/python -m benchmarks.run_all --separate load-20k

# The init time AWS's OpenTelemetry wrapper adds to a cold start (benchmarks/otel_init.py), measured
# with the distro the ADOT layer is built from, in its own venv (it pins its own OpenTelemetry).
OTEL_DISTRO ?= aws-opentelemetry-distro==0.21.0
bench-otel: $(STAMP)
	@test -x .venv-otel/bin/python || $(PYTHON313) -m venv .venv-otel
	$(BIN)/uv pip install --quiet --python .venv-otel/bin/python --no-config \
		--default-index https://pypi.org/simple "$(OTEL_DISTRO)" boto3
	$(BIN)/python -m benchmarks.otel_init --python .venv-otel/bin/python

build: $(STAMP)
	$(BIN)/sam build --template-file template.yaml

# One samconfig.toml environment per stage (dev is [default]): `make deploy STAGE=prod
# PARAMS="AlertEmail=ops@example.com"` adds PARAMS to that environment's parameter overrides.
# `make destroy` says what it keeps (the tables, the body bucket, your secrets); prod asks for the
# stack's name to be typed.
STAGE ?= dev
PARAMS ?=
SAM ?= $(BIN)/sam
SAMCONFIG ?= samconfig.toml
STAGE_ARGS = --stage '$(STAGE)' --samconfig '$(SAMCONFIG)' --sam '$(SAM)'
deploy: $(STAMP)
	$(BIN)/python -m lockgate_infra.deploy deploy $(STAGE_ARGS) --parameters '$(PARAMS)'

destroy: $(STAMP)
	$(BIN)/python -m lockgate_infra.deploy destroy $(STAGE_ARGS)

# Re-pin every lock from its list: the dev environment's (both pyproject.toml files, extra dev), the
# layer's (layers/core/requirements.in, with the dev pins as constraints: tests run what ships), uv's
# (requirements-uv.in, what `make setup` installs with) and each function's (with the layer's pins
# as constraints). pip-compile writes them all, whichever installer `make setup` used.
# Run with Python 3.13 (the Lambda runtime); commit the results.
# Versions that still fit are kept; `make lock UPGRADE=1` moves every pin to the newest that fits.
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(CURDIR)/$(BIN)/pip-compile --quiet --generate-hashes --strip-extras \
	--no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)
LOCKED_FUNCTIONS := agent_worker scheduled_jobs eval_jobs
lock: $(STAMP)
	@# lockgate (layers/core) is not on PyPI: a local wheel resolves it, and it is left out of the lock.
	rm -rf build/lock-wheels && $(BIN)/python -m pip wheel --quiet --no-deps -w build/lock-wheels layers/core
	$(PIP_COMPILE) --extra dev --find-links build/lock-wheels --unsafe-package lockgate \
		-o requirements-dev.txt layers/core/pyproject.toml pyproject.toml
	rm -rf build/lock-wheels
	cd layers/core && $(PIP_COMPILE) --allow-unsafe -o requirements.txt requirements.in
	$(PIP_COMPILE) --allow-unsafe -o requirements-uv.txt requirements-uv.in
	@for f in $(LOCKED_FUNCTIONS); do echo "lock functions/$$f"; \
		(cd functions/$$f && $(PIP_COMPILE) --allow-unsafe -o requirements.txt requirements.in) || exit 1; done

# Model prices from the pinned genai-prices (requirements-dev.txt) into the committed table
# layers/core/lockgate/model/published_prices.py; a test fails while the two disagree.
prices: $(STAMP)
	$(BIN)/python -m lockgate_infra.prices.generate

clean:
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache .coverage
