"""Training pipeline: the case contract, the trainer (timing, stop conditions) and the worker entry."""
