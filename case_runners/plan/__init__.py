"""The run plan: each selection resolved into its config and checked on the controller before any host is touched.

layering           a training case: case base < vendor hardware config < run overrides
inference_config   an inference case's three files (docs/inference.md)
inference          an inference selection into the resolved config's outer shape
run_vars           the run request's keys (RunRequest) and run vars, checked
run_plan           the run request in three steps: check_request, resolve_cases (every selection, the runtimes),
                   write_run_dir; make_plan takes all three (`python -m case_runners plan`)

It sits above the config leaf (case_runners/plan/config: YAML, types, ranges, selections) and the vendors, cases,
container images and trainer adapters it checks; nothing below imports it.
"""
