"""One package per base benchmark (catalog.py lists them): config.yaml (its params, with their ranges), README.md
(its method: what is timed, warm-up, iterations, how bytes or FLOPs are counted), __init__.py with footprint(),
the device memory its params need (torch-free: the plan calls it), and measure.py with measure(params, ctx)."""
