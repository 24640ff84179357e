"""FlagPerf migration: `python -m case_runners import-flagperf PATH` reads a FlagPerf checkout's configs without
running them (pyconfig.py), maps FlagPerf's names to perfplay's (case_runners/plan/config/flagperf_names.py, the one
table, which the plan's refusal of FlagPerf run vars reads too) and writes an inventory, run vars and vendor configs
(importer.py)."""
