"""Two commands that set runs side by side.

`python -m case_runners compare`: accuracy alignment of a candidate run against a reference run (docs/compare.md: the
same parameters, the training loss and final metric within a relative error, 1 % by default). rounds.py finds and
reads a round (its record, resolved config and rank 0's loss curve), alignment.py holds the arithmetic and the
parameter check, report.py the result document, its verdict and its table, plot.py the figure, cli.py the
subcommand.

`python -m case_runners compare-runs`: two runs or more, the first the baseline, figure by figure per case and scale,
with the ratio and whether the difference is beyond the round-to-round noise. runs.py matches the runs' summaries and
holds the noise rule and the document, runs_text.py the table, runs_cli.py the subcommand.

docs/compare.md describes both for users.
"""
