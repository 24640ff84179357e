#!/bin/bash
# Installs PyTorch (CPU build), the pins of perfplay's cases and the deepspeed stack's pin into /opt/perfplay-venv.
# Runs inside `docker build` from /tmp/perfplay-build, with the PIP_* build args in the environment.
set -euo pipefail
build=/tmp/perfplay-build
# A TLS-intercepting proxy's CA bundle (run var perfplay_image.ca_bundle).
if [[ -s $build/perfplay/ca.crt ]]; then
  export PIP_CERT=$build/perfplay/ca.crt
fi
python3 -m venv /opt/perfplay-venv
/opt/perfplay-venv/bin/pip install --no-cache-dir --progress-bar off -r "$build/perfplay/requirements-case.txt"
# DeepSpeed is an sdist: DS_BUILD_OPS=0 builds it without its C++ ops (the stack needs none on the CPU).
DS_BUILD_OPS=0 /opt/perfplay-venv/bin/pip install --no-cache-dir --progress-bar off \
  -r "$build/perfplay/deepspeed-requirements.txt"
