"""FlagPerf migration: `python -m case_runners import-flagperf PATH` reads a FlagPerf checkout's configs without
running them (pyconfig.py), maps FlagPerf's names to perfplay's (mapping.py, the one table) and writes an
inventory, run vars and vendor configs (importer.py)."""
