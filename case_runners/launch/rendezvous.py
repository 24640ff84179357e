"""How the launchers of a multi-node round meet before any rank starts (nnodes > 1 only).

Node 0 listens on master_addr:master_port (the one port users configure and open); every other node
connects, retrying until rdzv_timeout_s, and sends

  {"join": {"node_rank": K, "node_name": NAME, "run_id": RUN, "nnodes": N, "nproc": P}}

Node 0 answers {"welcome": {"node_name": NAME0, "wait_s": S}} or {"reject": REASON} (a different run,
layout, or a node rank already taken). Once all nnodes - 1 have joined, node 0 picks a free port for
torch's TCPStore and sends {"go": {"torch_port": PORT}}: every node starts its ranks with MASTER_PORT=PORT.
If they do not all join within rdzv_timeout_s, every node fails naming the missing ones. From here on the
connections carry heartbeats and failures (watchdog.py).
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from case_runners.core.netutil import bind_tcp, free_port
from case_runners.launch.watchdog import VERBS, CoordinatorLink, MemberLink, Peer, node_label
from case_runners.launch.wire import Channel, ChannelClosed, readable
from case_runners.records.names import FAILED, INTERRUPTED

TICK_S = 0.1
RETRY_S = 0.5
GO_SLACK_S = 5.0  # how much longer than node 0's remaining wait a joined node waits for "go"

Interrupted = Callable[[], "str | None"]  # the reason this launcher must stop (a signal), or None


class RendezvousError(Exception):
    """The round cannot start; `reason` says why, naming hosts, ranks, address and port."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def listen(addr: str, port: int, backlog: int) -> socket.socket:
    """Node 0's rendezvous socket on addr:port, or on every address when addr is not one of this host's
    (a NAT or DNS name, as the host preflight allows)."""
    try:
        return bind_tcp(addr, port, backlog)
    except OSError as exc:
        raise RendezvousError(FAILED, f"master port {port} on {addr} is in use or not bindable: "
                                        f"{exc.strerror or exc} (run var perfplay_master_port)") from None


# Node 0's states while the others join (Gathering.state); each transition is one of Gathering's methods.
GATHERING = "gathering"  # waiting for nnodes - 1 joins: connected() a launcher, received() its join
READY = "ready"          # every other node joined: host() sends them "go"
ABORTED = "aborted"      # interrupted, timed out, a node failed or went silent: `failure` says why


class Gathering:
    """Node 0's side of the rendezvous as a state machine, without sockets of its own: host() feeds it the
    launchers that connect, what they send and the clock, and acts on its state. A transition out of ABORTED
    never happens: the first failure is the round's."""

    def __init__(self, *, node_name: str, run_id: str, nnodes: int, nproc: int, where: str, rdzv_timeout_s: float,
                 heartbeat_timeout_s: float, now: float) -> None:
        self.node_name, self.run_id, self.nnodes, self.nproc, self.where = node_name, run_id, nnodes, nproc, where
        self.rdzv_timeout_s, self.heartbeat_timeout_s = rdzv_timeout_s, heartbeat_timeout_s
        self.me = node_label(0, node_name)
        self.deadline = now + rdzv_timeout_s
        self.pending: list[Channel] = []  # connected, not yet joined
        self.peers: dict[int, Peer] = {}
        self.rejected: list[str] = []
        self.state = GATHERING if nnodes > 1 else READY
        self.failure: RendezvousError | None = None
        self.abort_reason = ""  # what the joined nodes are told when the rendezvous is aborted

    def channels(self) -> list[Channel]:
        """The connections to listen on: the launchers not yet joined and the joined ones."""
        return [*self.pending, *(p.channel for p in self.peers.values())]

    def check(self, interrupted: str | None, now: float) -> str:
        """Before each wait while GATHERING: this launcher's interruption, then the deadline."""
        if self.state != GATHERING:
            return self.state
        if interrupted:
            return self._abort(INTERRUPTED, interrupted, f"rendezvous: {self.me} was interrupted: {interrupted}")
        if now > self.deadline:
            missing = ", ".join(str(k) for k in range(1, self.nnodes) if k not in self.peers)
            also = f"; rejected: {'; '.join(self.rejected)}" if self.rejected else ""
            return self._abort(FAILED, f"rendezvous: node(s) {missing} did not join {self.me} at {self.where} "
                                       f"within {self.rdzv_timeout_s:g} s{also}")
        return self.state

    def connected(self, channel: Channel) -> str:
        self.pending.append(channel)
        return self.state

    def closed(self, channel: Channel, closed: ChannelClosed) -> str:
        """A connection ended: a launcher that had not joined is forgotten, a joined one is lost."""
        peer = self._peer(channel)
        if peer is None:
            self.pending.remove(channel)
            return self.state
        return self._abort(FAILED, f"rendezvous: {peer.label} lost contact ({closed})")

    def received(self, channel: Channel, messages: list[dict[str, Any]], now: float) -> str:
        """What a connection sent: a launcher's join (the rest of what it sent with it is dropped), or a joined
        node's failure (anything else from a joined node is a heartbeat)."""
        peer = self._peer(channel)
        for message in messages:
            if peer is None and isinstance(message.get("join"), dict):
                self.pending.remove(channel)
                self._admit(channel, message["join"], now)
                break
            if peer is not None and "fail" in message:
                status = message["status"] if message.get("status") in VERBS else FAILED
                return self._abort(FAILED, f"rendezvous: {peer.label} {VERBS[status]}: {message['fail']}")
        return self.state

    def heartbeats(self) -> str:
        """After each wait: a joined node silent for heartbeat_timeout_s is lost; the others get a heartbeat due."""
        for peer in self.peers.values():
            if peer.channel.silent_for() > self.heartbeat_timeout_s:
                return self._abort(FAILED, f"rendezvous: {peer.label} lost contact "
                                           f"(no heartbeat for {self.heartbeat_timeout_s:g} s)")
            peer.channel.heartbeat_if_due()
        return self.state

    def _peer(self, channel: Channel) -> Peer | None:
        return next((p for p in self.peers.values() if p.channel is channel), None)

    def _admit(self, channel: Channel, join: dict[str, Any], now: float) -> None:
        """Welcome a join (READY once it is the last one) or reject it, saying why."""
        rank, name = join.get("node_rank"), str(join.get("node_name") or channel.peer)
        why = self._refusal(join, rank)
        if why is None and isinstance(rank, int):
            self.peers[rank] = Peer(rank, name, channel)
            channel.send({"welcome": {"node_name": self.node_name, "wait_s": max(0.0, self.deadline - now)}})
            if len(self.peers) == self.nnodes - 1 and self.state == GATHERING:
                self.state = READY
            return
        who = f"node {rank} ({name}) from {channel.peer}"
        self.rejected.append(f"{who}: {why}")
        print(f"rendezvous: {self.me} rejected {who}: {why}", file=sys.stderr, flush=True)
        channel.send({"reject": why, "node_name": self.node_name})
        channel.close()

    def _refusal(self, join: dict[str, Any], rank: Any) -> str | None:
        """Why a join cannot be admitted: another run or layout, a node rank out of range or taken; None if none."""
        if join.get("run_id") != self.run_id:
            return f"its run id {join.get('run_id')!r} is not node 0's {self.run_id!r}"
        if (join.get("nnodes"), join.get("nproc")) != (self.nnodes, self.nproc):
            return (f"it runs nnodes={join.get('nnodes')}, nproc={join.get('nproc')}; "
                    f"node 0 runs nnodes={self.nnodes}, nproc={self.nproc}")
        if not isinstance(rank, int) or not 0 < rank < self.nnodes:
            return f"node rank {rank} is outside 1..{self.nnodes - 1}"
        if rank in self.peers:
            taken = self.peers[rank]
            return f"node rank {rank} has already joined from {taken.node_name} ({taken.channel.peer})"
        return None

    def _abort(self, status: str, reason: str, abort_reason: str | None = None) -> str:
        if self.state != ABORTED:
            self.state, self.failure = ABORTED, RendezvousError(status, reason)
            self.abort_reason = abort_reason or reason
        return self.state

    def close(self) -> None:
        """Close the connections that did not join; aborted, tell the joined nodes why and close theirs too."""
        if self.state == ABORTED:
            for peer in self.peers.values():
                peer.channel.send({"abort": self.abort_reason, "status": FAILED})
                peer.channel.close()
        for channel in self.pending:
            channel.close()


def host(*, master_addr: str, master_port: int, node_name: str, run_id: str, nnodes: int, nproc: int,
         rdzv_timeout_s: float, heartbeat_timeout_s: float, interrupted: Interrupted) -> CoordinatorLink:
    """Node 0: wait for the other nnodes - 1 launchers, then start them all."""
    listener = listen(master_addr, master_port, backlog=max(8, nnodes))
    gathering = Gathering(node_name=node_name, run_id=run_id, nnodes=nnodes, nproc=nproc,
                          where=f"{master_addr}:{master_port}", rdzv_timeout_s=rdzv_timeout_s,
                          heartbeat_timeout_s=heartbeat_timeout_s, now=time.monotonic())
    while gathering.check(interrupted(), time.monotonic()) == GATHERING:
        if _serve(listener, gathering) != ABORTED:
            gathering.heartbeats()
    gathering.close()
    listener.close()
    if gathering.failure is not None:
        raise gathering.failure
    torch_port = free_port("")  # torch's TCPStore listens on every address of node 0
    for peer in gathering.peers.values():
        peer.channel.send({"go": {"torch_port": torch_port}})
    return CoordinatorLink(node_name, gathering.peers, heartbeat_timeout_s, torch_port)


def _serve(listener: socket.socket, gathering: Gathering) -> str:
    """One wait of node 0 (TICK_S at most): accept the launchers that connect and pass on what they send."""
    for ready in readable([listener, *gathering.channels()], TICK_S):
        if ready is listener:
            try:
                sock, _ = listener.accept()
                gathering.connected(Channel(sock))
            except OSError:
                pass
            continue
        try:
            messages = ready.receive()
        except ChannelClosed as closed:
            state = gathering.closed(ready, closed)
        else:
            state = gathering.received(ready, messages, time.monotonic())
        if state == ABORTED:
            return state
    return gathering.state


def connect(addr: str, port: int, timeout_s: float, interrupted: Interrupted) -> socket.socket:
    """Connect to node 0, retrying (it may start later) for timeout_s seconds."""
    deadline = time.monotonic() + timeout_s
    last = "no attempt"
    while True:
        reason = interrupted()
        if reason:
            raise RendezvousError(INTERRUPTED, reason)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RendezvousError(FAILED, f"rendezvous: cannot reach node 0 at {addr}:{port} within "
                                            f"{timeout_s:g} s ({last}) — check perfplay_master_port and the firewall")
        try:
            return socket.create_connection((addr, port), timeout=min(remaining, 2.0))
        except OSError as exc:
            last = exc.strerror or str(exc) or type(exc).__name__
        time.sleep(min(RETRY_S, max(0.0, deadline - time.monotonic())))


def join(*, master_addr: str, master_port: int, node_rank: int, node_name: str, run_id: str, nnodes: int,
         nproc: int, rdzv_timeout_s: float, heartbeat_timeout_s: float, interrupted: Interrupted) -> MemberLink:
    """Node > 0: join node 0 and wait for its go."""
    where = f"{master_addr}:{master_port}"
    me = node_label(node_rank, node_name)
    channel = Channel(connect(master_addr, master_port, rdzv_timeout_s, interrupted))
    waiting = GO_SLACK_S  # node 0 answers a join at once
    deadline = time.monotonic() + waiting
    channel.send({"join": {"node_rank": node_rank, "node_name": node_name, "run_id": run_id,
                           "nnodes": nnodes, "nproc": nproc}})
    coordinator = "node 0"

    def fail(status: str, reason: str) -> RendezvousError:
        channel.close()
        return RendezvousError(status, reason)

    welcomed = False
    while True:
        reason = interrupted()
        if reason:
            channel.send({"fail": reason, "status": INTERRUPTED, "urgent": True})
            raise fail(INTERRUPTED, reason)
        if time.monotonic() > deadline:
            what = "start or abort of the round" if welcomed else "answer to the join"
            raise fail(FAILED, f"rendezvous: no {what} of {me} from {coordinator} at {where} "
                                 f"within {waiting:.0f} s")
        if readable([channel], TICK_S):
            try:
                messages = channel.receive()
            except ChannelClosed as closed:
                if welcomed:
                    raise fail(FAILED, f"rendezvous: lost contact with {coordinator} at {where} ({closed})") from None
                raise fail(FAILED, f"rendezvous: {coordinator} at {where} closed the connection before "
                                     f"answering the join of {me} ({closed})") from None
            for message in messages:
                if "reject" in message:
                    coordinator = node_label(0, str(message.get("node_name")))
                    raise fail(FAILED, f"rendezvous: {coordinator} at {where} rejected {me}: {message['reject']}")
                if "abort" in message:
                    raise fail(FAILED, str(message["abort"]))
                if isinstance(message.get("welcome"), dict):
                    welcomed = True
                    coordinator = node_label(0, str(message["welcome"].get("node_name")))
                    waiting = float(message["welcome"].get("wait_s") or 0) + GO_SLACK_S
                    deadline = time.monotonic() + waiting
                if isinstance(message.get("go"), dict) and welcomed:
                    return MemberLink(channel, coordinator, where, heartbeat_timeout_s,
                                      int(message["go"]["torch_port"]))
        if welcomed and channel.silent_for() > heartbeat_timeout_s:
            raise fail(FAILED, f"rendezvous: lost contact with {coordinator} at {where} "
                                 f"(no heartbeat for {heartbeat_timeout_s:g} s)")
        if welcomed:
            channel.heartbeat_if_due()
