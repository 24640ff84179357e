"""Built-in training stacks: each module defines trainer adapter points (tasks/training/adapter.py), the base adapter
of a run on that stack."""
