"""The tasks a rank runs: training, inference, base (benchmarks) and generate."""
