"""The history of runs: every finished run's rounds indexed into an SQLite database (db.py), one row per round
(index.py), looked up by run id (lookup.py) and listed by `python -m case_runners history` (cli.py). The JSON files of
the run directories stay the source of truth: `history reindex` rebuilds the database from them. docs/history.md
describes it."""
