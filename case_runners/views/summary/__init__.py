"""The run summary as people read it: its cells, the text table, the Markdown page and the files written, and the
`summary` command."""
