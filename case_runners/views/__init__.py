"""The views of runs: the run summary's text and Markdown, the HTML report, compare, history and the case catalogue."""
