#!/bin/bash
# Installs the pins of perfplay's cases into the NGC image's Python, keeping NGC's own torch build.
# Runs inside `docker build` from /tmp/perfplay-build, with the PIP_* build args in the environment.
set -euo pipefail
build=/tmp/perfplay-build
if [[ -s $build/perfplay/ca.crt ]]; then
  export PIP_CERT=$build/perfplay/ca.crt
fi
# NGC's torch is built for the image's CUDA: never replace it with a wheel from an index.
grep -v -i '^torch==' "$build/perfplay/requirements-case.txt" >"$build/requirements-nvidia.txt"
python3 -m pip install --no-cache-dir --progress-bar off -r "$build/requirements-nvidia.txt"
