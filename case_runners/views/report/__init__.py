"""`python -m case_runners report RUN... -o report.html`: one self-contained HTML page over one or more run
directories (summary tables, throughput, scaling, MFU, loss curves, monitor series, environment, failed rounds);
the play and `case_runners run` write it into the run directory as report.html. docs/report.md describes it."""

REPORT_NAME = "report.html"  # in the run directory, beside summary.md
