"""Configuration, the leaf every layer may import: the YAML loader, value types, param ranges, case selections and
the resolved config's shape. It imports nothing of case_runners but errors and paths; resolving a selection against
cases and vendors is the plan's (case_runners/plan)."""
