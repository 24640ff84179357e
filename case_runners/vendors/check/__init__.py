"""`python -m case_runners check-vendor NAME [--functional]`: a vendor's folder against its layout and the
contracts of docs/adapting-a-chip.md, one line per finding, usable as the vendor's CI (exit status 1 on any error).

structure.py reads the files (no torch, nothing run); monitor_run.py runs the monitor contract; functional.py runs
every adapted case at 1x1 (1x2 where the host has two devices) for a few steps and every adapted inference case
through steps a-g.
"""
