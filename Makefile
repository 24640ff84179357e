# perfplay: `make run` runs the default case on this machine; `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PLAYBOOK_ARGS ?=

.PHONY: run test lint bench clean

$(VENV)/.installed: requirements.txt requirements-case.txt requirements-agent.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

## run: the default standard case through ansible-playbook on localhost; prints the summary
run: $(VENV)/.installed
	$(VENV)/bin/ansible-playbook run_case.yml $(PLAYBOOK_ARGS)

## test: lint, unit, module, integration and cluster tests
# Separate pytest processes: importing Ansible patches sys.intern, which torch._dynamo then refuses.
# The cluster tests need root (namespaces, sshd): skipped without it, except in CI where that fails.
test: $(VENV)/.installed-dev lint
	$(PY) -m pytest tests/unit
	$(PY) -m pytest tests/modules tests/integration
	$(PY) -m pytest tests/cluster
	$(PY) -m pytest tests/docker

lint: $(VENV)/.installed-dev
	$(VENV)/bin/yamllint --strict .
	$(VENV)/bin/ansible-lint

## bench: harness overhead, monitor cost, p_core fidelity, control plane on 2-16 hosts, container overhead (root),
## inference whole/core and onnxruntime vs torch eager
# Every script runs; the target fails when any of them missed its target.
BENCHES := monitor_cost fidelity harness_overhead control_plane container_overhead inference
bench: $(VENV)/.installed
	@missed=""; for b in $(BENCHES); do $(PY) bench/$$b.py || missed="$$missed $$b"; done; \
	if [ -n "$$missed" ]; then echo "bench: missed its target:$$missed"; exit 1; fi

clean:
	rm -rf $(VENV) .pytest_cache .ansible
