"""Configuration: case selection, layering (case base < vendor config < run overrides), the run plan."""
