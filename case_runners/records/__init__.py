"""What a run leaves behind, defined once: the names results are made of (names.py) and a typed, versioned
document per artifact, each with its validator (docs/results.md describes every field).

Standard library only: the launcher writes the node result with it, on hosts where torch or yaml may be absent.
"""
