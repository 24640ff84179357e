"""Training pipeline: the case contract, the trainer (timing, stop conditions) and the task a rank runs."""
