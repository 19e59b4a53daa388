# rev88-bundle. `make help` lists the targets. Every target sets up the virtual
# environment it needs (.venv) on first use; nothing has to be installed by hand.

PYTHON     ?= python3
VENV       ?= .venv
BIN        := $(VENV)/bin
# The learner side needs torch. 2.13.0 is pinned for CPU hosts and CI; the GPU image pins 2.5.1.
TORCH_SPEC ?= torch==2.13.0
DEVICE     ?= cpu
RUN_DIR    ?= out/run-local
ARCHIVE    ?=

.PHONY: help test qualify verify report lint clean-venv

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.base: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

$(VENV)/.learner: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[learner]"
	@touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.learner
	$(BIN)/python -m pip install -q -e ".[learner,test,report]"
	@touch $@

test: $(VENV)/.test ## run the test suite (CPU; GPU tests are skipped without CUDA)
	$(BIN)/python -m pytest -q

qualify: $(VENV)/.learner ## train and score all 11 draws (DEVICE=cpu|cuda) into RUN_DIR
	$(BIN)/rev88 qualify --device $(DEVICE) --out $(RUN_DIR)

verify: $(VENV)/.base ## verify every shipped evidence archive (no GPU, no torch)
	$(BIN)/rev88 verify $(ARCHIVE)

lint: $(VENV)/.test ## ruff over the Python sources
	$(BIN)/python -m ruff check bundle verify tests

clean-venv: ## remove the virtual environment
	rm -rf $(VENV)
