#!/usr/bin/python
# -*- coding: utf-8 -*-
# perfplay: the docker image a vendor's cases run in, built only when its tag is absent.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: case_image
short_description: Build a perfplay vendor image for a framework unless its tag exists
description:
  - Runs C(python -m case_runners image) on the host, which talks to the local Docker engine through the
    Docker SDK.
  - The image is C(perfplay-<vendor>-<framework>:<tag>), built from C(vendor/<vendor>/docker_image/<framework>/)
    (C(Dockerfile), C(<framework>_install.sh)) plus perfplay's C(requirements-case.txt); the tag is a hash of
    those files and of the base image, so an edited Dockerfile gets a new tag and is built, and an unchanged
    one is not (C(changed=false)).
  - Pip sources (index, extra index, find-links, trusted host) and the CA bundle are passed as build arguments
    (a local find-links folder and the CA bundle are copied into the build context); they are not part of the
    tag, so pointing a build at a mirror does not rebuild.
options:
  vendor:
    description: Vendor name, a folder C(vendor/<vendor>/).
    type: str
    required: true
  framework:
    description: Framework, a folder C(vendor/<vendor>/docker_image/<framework>/).
    type: str
    default: pytorch
  settings:
    description:
      - Build settings over the vendor's C(container.build) (run var C(perfplay_image)); an empty value drops
        a default.
      - "Keys: C(base_image), C(pip_index_url), C(pip_extra_index_url), C(pip_find_links), C(pip_trusted_host),
        C(ca_bundle)."
    type: dict
    default: {}
  log:
    description: File on the host that receives the build output (only written when it builds).
    type: path
requirements:
  - The Docker SDK for Python (C(docker)) in the environment of O(python).
extends_documentation_fragment:
  - perfplay_cli
  - perfplay_attributes
attributes:
  check_mode:
    support: full
    details: Reports whether the image would be built (C(changed)) and builds nothing.
  idempotent:
    support: full
    details: A second call finds the tag and changes nothing.
author:
  - perfplay contributors
"""

EXAMPLES = r"""
- name: Build the cpu vendor's PyTorch image from a local base, through a mirror
  case_image:
    project_dir: /opt/perfplay
    python: /opt/perfplay/venv/bin/python
    vendor: cpu
    framework: pytorch
    settings:
      base_image: python:3.11-slim-bookworm
      pip_index_url: https://mirror.example.com/pypi/simple
      ca_bundle: /etc/ssl/certs/ca-certificates.crt
"""

RETURN = r"""
ref:
  description: The image, C(<name>:<tag>).
  returned: success
  type: str
  sample: perfplay-cpu-pytorch:21354e1214a921b4
id:
  description: Image id (null in check mode when it would be built).
  returned: success
  type: str
  sample: "sha256:fcbee62d201bd10e68bd4902c096c2a1cc5bda7454fc2a54190f3570a5faff16"
built:
  description: True when this call built the image.
  returned: success
  type: bool
seconds:
  description: Seconds the build took.
  returned: when built
  type: float
  sample: 73.4
"""

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible.module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, request_file, run_cli
except ImportError:  # imported as a plain file by the module tests, which put the checkout on sys.path
    from module_utils._perfplay_cli import COMMON_ARGUMENT_SPEC, cli_argv, request_file, run_cli


def main() -> None:
    argument_spec = dict(
        COMMON_ARGUMENT_SPEC,
        vendor=dict(type="str", required=True),
        framework=dict(type="str", default="pytorch"),
        settings=dict(type="dict", default={}),
        log=dict(type="path"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    request = dict(vendor=params["vendor"], framework=params["framework"], settings=params["settings"],
                   log=params["log"])
    with request_file(request, "perfplay-image-") as request_path:
        argv = cli_argv(params["python"], "image", request=request_path, check=module.check_mode)
        result = run_cli(module, argv, params["project_dir"])
    doc = result.doc
    if result.rc != 0 or doc is None:
        message = (result.stderr or "").strip().replace("error: ", "", 1) or "case_runners image failed"
        module.fail_json(msg="image of %s/%s: %s" % (params["vendor"], params["framework"], message),
                         cmd=result.argv, rc=result.rc)
    module.exit_json(changed=bool(doc["changed"]), ref=doc["ref"], id=doc.get("id"), built=bool(doc["built"]),
                     **({"seconds": doc["seconds"]} if "seconds" in doc else {}))


if __name__ == "__main__":
    main()
