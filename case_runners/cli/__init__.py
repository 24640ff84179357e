"""The entry: `python -m case_runners` / `perfplay` (dispatch, each command registered by its room) and the single-host
runner."""
