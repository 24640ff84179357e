"""node_result.json (`perfplay.node_result/1`): a node's launcher's verdict on its round, written when the node ends.

Standard library only: the launcher writes it (case_runners/launch/node.py), on hosts where torch may be absent.
"""

from __future__ import annotations

import dataclasses

from case_runners.records.names import NODE_STATUSES
from case_runners.records.schema import ABSENT, Absent, Document, choices

NODE_RESULT = "node_result.json"  # in the node directory


@dataclasses.dataclass(kw_only=True)
class RankExit(Document):
    exit_code: int | None  # None: the rank had not exited when the launcher ended (it was killed with it)
    log: str  # rank<R>.out.log, in the node directory


@dataclasses.dataclass(kw_only=True)
class NodeResult(Document):
    SCHEMA = "perfplay.node_result/1"

    host: str  # the node's name in the inventory (the launcher's --node-name)
    node_name: str
    hostname: str  # its machine's
    node_rank: int
    run_id: str
    status: str = dataclasses.field(metadata=choices(*NODE_STATUSES))
    reason: str | None  # why, unless it succeeded
    duration_s: float  # from the launcher's start to its end
    master: str  # node 0's address:port
    torch_port: int | None  # the port of torch's rendezvous
    nic: str | None  # the network interface of the collectives
    ranks: dict[str, RankExit]  # by global rank
    environment_file: str | None | Absent = ABSENT  # the vendor case's environment_variables.sh (launcher)
    # The docker runtime's: the node's container, its image, its exit code, and how long it ran.
    container: str | Absent = ABSENT
    image: str | Absent = ABSENT
    exit_code: int | None | Absent = ABSENT
    container_duration_s: float | Absent = ABSENT
    write_error: str | Absent = ABSENT  # only in the launcher's answer when the file could not be written
