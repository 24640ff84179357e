"""The links between the launchers of a multi-node round, once they have met (see rendezvous.py).

Node 0 holds one connection per other node (a star). Both ends send a heartbeat every second; a peer
silent for heartbeat_timeout_s, or whose connection closes, is lost. The protocol after the rendezvous:

  node k -> node 0   {"fail": REASON, "status": STATUS, "urgent": BOOL}   k's ranks failed / timed out / k was
                                                                         interrupted; k stops its ranks
  node k -> node 0   {"done": true}                                       k's ranks all succeeded
  node 0 -> node k   {"abort": REASON, "status": STATUS}                  stop your ranks; REASON names the root cause

A rank that exits with an error is often the victim of a peer that died (a collective broke), so a node
waits SETTLE_S after such a failure for a better root cause: a rank killed by a signal, a lost node, a
timeout or a signal to a launcher ("urgent") settle at once. Node 0 has the last word: its abort reason
names the root cause for every node. A node > 0 that loses node 0 stops its own ranks (self-fencing: nobody
else can reach it to clean up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from case_runners.launch.wire import Channel, ChannelClosed, readable
from case_runners.records.names import FAILED, INTERRUPTED, TIMEOUT

SETTLE_S = 1.0
VERBS = {FAILED: "failed", TIMEOUT: "timed out", INTERRUPTED: "was interrupted"}


def node_label(node_rank: int, node_name: str) -> str:
    return f"node {node_rank} ({node_name})"


@dataclass
class Failure:
    """Why a node stops: `reason` in the failing node's own words, `cause` as the other nodes see it."""
    status: str
    reason: str
    cause: str
    urgent: bool
    own: bool
    at: float = field(default_factory=time.monotonic)


def own_failure(node_rank: int, node_name: str, status: str, reason: str, urgent: bool) -> Failure:
    return Failure(status, reason, f"{node_label(node_rank, node_name)} {VERBS[status]}: {reason}", urgent, True)


def root_cause(failures: list[Failure]) -> Failure:
    return min(failures, key=lambda f: (not f.urgent, f.at))


def settled(failures: list[Failure]) -> bool:
    """Whether to stop now: an urgent failure is known, or SETTLE_S has passed since the first one."""
    return any(f.urgent for f in failures) or time.monotonic() >= min(f.at for f in failures) + SETTLE_S


def aborted_status(status: str) -> str:
    """The status of a node stopped for another node's reason: a timeout stays a timeout."""
    return TIMEOUT if status == TIMEOUT else FAILED


@dataclass
class Peer:
    node_rank: int
    node_name: str
    channel: Channel
    state: str = "running"  # running | done | failed | lost

    @property
    def label(self) -> str:
        return node_label(self.node_rank, self.node_name)


class CoordinatorLink:
    """Node 0's side: every other node's connection."""

    def __init__(self, node_name: str, peers: dict[int, Peer], heartbeat_timeout_s: float, torch_port: int) -> None:
        self.node_name = node_name
        self.peers = peers
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.torch_port = torch_port
        self.failures: list[Failure] = []
        self.outcome: tuple[str, str] | None = None  # never set on node 0: it decides

    def poll(self, timeout_s: float) -> None:
        """Read what the peers sent (waiting at most timeout_s), check their heartbeats, send ours."""
        running = {p.channel: p for p in self.peers.values() if p.state == "running"}
        for channel in readable(list(running), timeout_s):
            peer = running[channel]
            try:
                messages = channel.receive()
            except ChannelClosed as closed:
                self._lost(peer, str(closed))
                continue
            for message in messages:
                self._handle(peer, message)
        for peer in self.peers.values():
            if peer.state == "running":
                if peer.channel.silent_for() > self.heartbeat_timeout_s:
                    self._lost(peer, f"no heartbeat for {self.heartbeat_timeout_s:g} s")
                else:
                    peer.channel.heartbeat_if_due()

    def _handle(self, peer: Peer, message: dict) -> None:
        if peer.state != "running":
            return
        if "fail" in message:
            status = message["status"] if message.get("status") in VERBS else FAILED
            peer.state = "failed"
            self.failures.append(Failure(status, str(message["fail"]),
                                         f"{peer.label} {VERBS[status]}: {message['fail']}",
                                         bool(message.get("urgent")), False))
        elif "done" in message:
            peer.state = "done"

    def _lost(self, peer: Peer, why: str) -> None:
        peer.state = "lost"
        peer.channel.close()
        self.failures.append(Failure(FAILED, f"lost contact ({why})", f"{peer.label} lost contact ({why})",
                                     True, False))

    def peers_done(self) -> bool:
        return all(p.state == "done" for p in self.peers.values())

    def conclude(self, root: Failure) -> tuple[str, str]:
        """Stop every other node for root; this node's (status, reason)."""
        status, reason = aborted_status(root.status), f"stopped: {root.cause}"
        self.abort(status, reason)
        return (root.status, root.reason) if root.own else (status, reason)

    def abort(self, status: str, reason: str) -> None:
        for peer in self.peers.values():
            peer.channel.send({"abort": reason, "status": status})

    def finish(self) -> None:
        """This node's ranks all succeeded, and so did every other node's: nothing left to tell."""

    def close(self) -> None:
        for peer in self.peers.values():
            peer.channel.close()


class MemberLink:
    """A node > 0's side: its connection to node 0."""

    def __init__(self, channel: Channel, coordinator: str, master: str, heartbeat_timeout_s: float,
                 torch_port: int) -> None:
        self.channel = channel
        self.coordinator = coordinator  # "node 0 (NAME)"
        self.master = master  # "ADDR:PORT"
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.torch_port = torch_port
        self.failures: list[Failure] = []  # a member hears of no other node's failure, only of aborts
        self.outcome: tuple[str, str] | None = None  # (status, reason) once node 0 aborts us or is lost

    def poll(self, timeout_s: float) -> None:
        """Read what node 0 sent (waiting at most timeout_s), check its heartbeat, send ours."""
        if self.outcome:
            time.sleep(max(0.0, timeout_s))
            return
        if readable([self.channel], timeout_s):
            try:
                messages = self.channel.receive()
            except ChannelClosed as closed:
                self._lost(str(closed))
                return
            for message in messages:
                if "abort" in message:
                    self.outcome = (aborted_status(str(message.get("status"))), str(message["abort"]))
                    return
        if self.channel.silent_for() > self.heartbeat_timeout_s:
            self._lost(f"no heartbeat for {self.heartbeat_timeout_s:g} s")
        else:
            self.channel.heartbeat_if_due()

    def _lost(self, why: str) -> None:
        self.channel.close()
        self.outcome = (FAILED, f"lost contact with {self.coordinator} at {self.master} ({why})")

    def peers_done(self) -> bool:
        return True

    def conclude(self, root: Failure) -> tuple[str, str]:
        """Tell node 0 why this node stops (it stops the others); this node's (status, reason)."""
        self.channel.send({"fail": root.reason, "status": root.status, "urgent": root.urgent})
        return root.status, root.reason

    def finish(self) -> None:
        """This node's ranks all succeeded."""
        self.channel.send({"done": True})

    def close(self) -> None:
        self.channel.close()


Link = CoordinatorLink | MemberLink
