"""The base task: hardware microbenchmarks (GEMM per precision, memory bandwidth and capacity, host-device transfers,
collectives), each figure beside the vendor's stated peak.

case_runners/plan/config/benchmarks.py names the benchmarks and the peak each is measured against; benchmarks/<name>/
holds each one (its config.yaml, its README.md with the method, footprint() in __init__.py and measure() in
measure.py); task.py is the rank's task; timing.py times work through the vendor's runtime; toolkit.py builds and
runs the vendor's toolkit (mode toolkit or both). Importing this package never imports torch.
"""
