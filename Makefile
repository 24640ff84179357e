# perfplay: `make run` runs the default case on this machine; `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Every install pins the whole dependency tree (constraints.txt).
PIP    := $(PY) -m pip install --quiet -c constraints.txt
PLAYBOOK_ARGS ?=
# The oldest Python perfplay runs on: pyproject.toml's requires-python.
PYTHON_MIN := $(shell sed -n 's/^requires-python = ">=\([0-9.]*\)".*/\1/p' pyproject.toml)

.PHONY: run dev test lint bench constraints check-python clean

# The venv holds the requirements and perfplay itself, editable (the `perfplay` command, case_runners importable
# from vendor/ and bench/ scripts); pip and setuptools (its build backend) at their pins first.
$(VENV)/.installed: pyproject.toml constraints.txt requirements.txt requirements-case.txt requirements-agent.txt \
                    requirements-controller.txt
	@$(MAKE) --no-print-directory check-python
	$(PYTHON) -m venv $(VENV)
	$(PIP) pip setuptools
	$(PIP) -r requirements.txt
	$(PIP) --no-deps --no-build-isolation --editable .
	touch $@

# The torchtitan stack's pins go in without their declared dependencies (case_runners/plan/config/stacks.py NO_DEPS).
TITAN_PINS := case_runners/tasks/training/stacks/torchtitan-requirements.txt
# DS_BUILD_OPS=0: the deepspeed stack's sdist builds without its C++ ops (tasks/training/stacks/deepspeed.py).
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt $(TITAN_PINS)
	DS_BUILD_OPS=0 $(PIP) -r requirements-dev.txt
	$(PIP) --no-deps -r $(TITAN_PINS)
	touch $@

## check-python: PYTHON is at least pyproject's requires-python, or one line says which to set
comma := ,
NEEDS := perfplay needs Python >= $(PYTHON_MIN); $(PYTHON) is
check-python:
	@command -v $(PYTHON) >/dev/null || { echo "$(NEEDS) not installed: set PYTHON=python$(PYTHON_MIN)" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(v[:3] < ($(subst .,$(comma),$(PYTHON_MIN)),) and \
	"$(NEEDS) %d.%d.%d: set PYTHON=python$(PYTHON_MIN)" % v[:3])'

## run: the default standard case through ansible-playbook on localhost; prints the summary
run: $(VENV)/.installed
	$(VENV)/bin/ansible-playbook run_case.yml $(PLAYBOOK_ARGS)

## dev: the venv with the development tools too (requirements-dev.txt: pytest, the linters, ansible-runner,
## ansible-builder), which `make run` does not install
dev: $(VENV)/.installed-dev

## test: lint, unit, report (a real headless Chromium), module, integration and cluster tests
# Separate pytest processes: importing Ansible patches sys.intern, which torch._dynamo then refuses.
# The cluster tests need root (namespaces, sshd): skipped without it, except in CI where that fails.
# The unit and report tests, and the module and integration tests, run in two workers each (pytest-xdist), a test
# file per worker at a time, so that the fixtures a file shares stay in one process, the longest files first
# (tests/run_order.py). Each pytest process lists its slowest tests and then its own wall time, so CI's output
# shows where the time goes.
PYTEST := $(PY) -m pytest --durations=15
timed_sh = echo "$(PYTEST) $(1)"; start=$$(date +%s); $(PYTEST) $(1); rc=$$?; \
	echo "make test: pytest $(1): $$(( $$(date +%s) - start )) s, exit $$rc"; exit $$rc
timed = @$(timed_sh)
# The cluster and docker suites mostly wait (sshd, namespaces, containers, timeouts), so they run side by side,
# each into its own log, printed whole once both have ended; the target fails when either did.
side_by_side = @echo "make test: $(1) and $(2) side by side; each one's output follows when both have ended"; \
	logs=$$(mktemp -d); ( $(call timed_sh,$(1)) ) >$$logs/1 2>&1 & first=$$!; \
	( $(call timed_sh,$(2)) ) >$$logs/2 2>&1 & second=$$!; \
	wait $$first; rc1=$$?; wait $$second; rc2=$$?; cat $$logs/1 $$logs/2; rm -rf $$logs; \
	[ $$rc1 -eq 0 ] && [ $$rc2 -eq 0 ]
test: $(VENV)/.installed-dev lint
	$(call timed,-n 2 --dist loadfile tests/unit tests/report)
	$(call timed,-n 2 --dist loadfile tests/modules tests/integration)
	$(call side_by_side,tests/cluster,tests/docker)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/yamllint --strict .
	$(VENV)/bin/ansible-lint

## bench: harness overhead, monitor cost, p_core fidelity (resnet50's; mobilenetv2's and llama's against transformers),
## control plane on 2-16 hosts, container overhead (root), inference whole/core and onnxruntime vs torch eager, the
## base gemm figure vs a bare torch.matmul loop, the report of 100 rounds, llama's time to first step on each stack
## against pytorch's
# Every script runs; the target fails when any of them missed its target or could not judge it (bench/verdict.py).
BENCHES := monitor_cost fidelity fidelity_image harness_overhead control_plane container_overhead inference gemm_honesty operator_timing report_rounds stack_launch
bench: $(VENV)/.installed
	@missed=""; for b in $(BENCHES); do $(PY) -m bench.$$b || missed="$$missed $$b"; done; \
	$(PY) -m bench.fidelity --case llama || missed="$$missed fidelity-llama"; \
	if [ -n "$$missed" ]; then echo "bench: missed or could not judge its target:$$missed"; exit 1; fi

## constraints: rewrite constraints.txt from the venv, after a pin in requirements*.txt changed and was installed
constraints: $(VENV)/.installed-dev
	$(PY) -m tests.dependency_tree >constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache .ansible build perfplay.egg-info
