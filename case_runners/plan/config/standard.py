"""Standard stays standard (docs/configuration.md): whether a round ran its case's standard workload.

A resolved config, a round record and a case of the run summary carry the same two fields, named here once;
the summary also lists the run's non-standard cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

STANDARD = "standard"  # bool: true unless a key that changes the workload was changed
NON_STANDARD = "non_standard"  # the keys that changed it, sorted
NOT_STANDARD_NOTE = "non-standard: not a standard result"


def standard_fields(changed: Iterable[str]) -> dict[str, Any]:
    """The two fields for the keys that changed the workload."""
    keys = sorted(set(changed))
    return {STANDARD: not keys, NON_STANDARD: keys}


def read_standard(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The two fields of a resolved config or a record; one without them (written before they existed) is
    standard."""
    keys = sorted(doc.get(NON_STANDARD) or [])
    return {STANDARD: doc.get(STANDARD, True) is not False and not keys, NON_STANDARD: keys}
