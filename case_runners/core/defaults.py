"""The defaults of a run, defined once.

The plan (plan/run_vars.py) gives them to the run vars left unset, the launcher and the CLI to their flags; the
Ansible modules default to none and leave it to these. docs/run-vars.md states them (a test keeps it in step).
Imports nothing: the launcher and the monitors import it.
"""

VENDOR = "cpu"  # the vendor of a run that names none
CASE = "digits_cnn"  # the case of a run that names none (with perfplay_task: base, the vendor's base suite)
MIN_FREE_BYTES = 1 << 30  # a run refuses to start with less free space in its results dir (any host)

RDZV_TIMEOUT_S = 30.0  # seconds the nodes of a multi-node round have to meet at node 0
RDZV_TIMEOUT_ENV = "PERFPLAY_RDZV_TIMEOUT_S"  # a host's own default, over RDZV_TIMEOUT_S
HEARTBEAT_TIMEOUT_S = 10.0  # seconds of silence after which a node of a multi-node round counts as lost
MONITOR_INTERVAL_S = 1.0  # seconds between two monitor samples
MONITOR_INTERVAL_RANGE = (0.01, 3600.0)  # what a monitor accepts, inclusive
# finish and cleanup: seconds between SIGTERM and SIGKILL when a round's leftovers or a run's processes are stopped
# (a rank's own grace after the stop signal is launch/node.py's RANK_EXIT_GRACE_S)
CLEANUP_GRACE_S = 10.0
PROGRESS_INTERVAL_S = 30.0  # seconds one `case_runners wait` poll lasts: a progress line per host and interval
