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

from case_runners.launch.watchdog import VERBS, CoordinatorLink, MemberLink, Peer, node_label
from case_runners.launch.wire import Channel, ChannelClosed, readable
from case_runners.netutil import bind_tcp, free_port
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


def host(*, master_addr: str, master_port: int, node_name: str, run_id: str, nnodes: int, nproc: int,
         rdzv_timeout_s: float, heartbeat_timeout_s: float, interrupted: Interrupted) -> CoordinatorLink:
    """Node 0: wait for the other nnodes - 1 launchers, then start them all."""
    where = f"{master_addr}:{master_port}"
    me = node_label(0, node_name)
    listener = listen(master_addr, master_port, backlog=max(8, nnodes))
    deadline = time.monotonic() + rdzv_timeout_s
    pending: list[Channel] = []  # connected, not yet joined
    peers: dict[int, Peer] = {}
    rejected: list[str] = []

    def fail(status: str, reason: str, abort_reason: str | None = None) -> RendezvousError:
        for peer in peers.values():
            peer.channel.send({"abort": abort_reason or reason, "status": FAILED})
            peer.channel.close()
        for channel in pending:
            channel.close()
        listener.close()
        return RendezvousError(status, reason)

    def admit(channel: Channel, join: dict) -> None:
        rank, name = join.get("node_rank"), str(join.get("node_name") or channel.peer)
        who = f"node {rank} ({name}) from {channel.peer}"
        if join.get("run_id") != run_id:
            why = f"its run id {join.get('run_id')!r} is not node 0's {run_id!r}"
        elif (join.get("nnodes"), join.get("nproc")) != (nnodes, nproc):
            why = (f"it runs nnodes={join.get('nnodes')}, nproc={join.get('nproc')}; "
                   f"node 0 runs nnodes={nnodes}, nproc={nproc}")
        elif not isinstance(rank, int) or not 0 < rank < nnodes:
            why = f"node rank {rank} is outside 1..{nnodes - 1}"
        elif rank in peers:
            why = f"node rank {rank} has already joined from {peers[rank].node_name} ({peers[rank].channel.peer})"
        else:
            peers[rank] = Peer(rank, name, channel)
            channel.send({"welcome": {"node_name": node_name, "wait_s": max(0.0, deadline - time.monotonic())}})
            return
        rejected.append(f"{who}: {why}")
        print(f"rendezvous: {me} rejected {who}: {why}", file=sys.stderr, flush=True)
        channel.send({"reject": why, "node_name": node_name})
        channel.close()

    while len(peers) < nnodes - 1:
        reason = interrupted()
        if reason:
            raise fail(INTERRUPTED, reason, f"rendezvous: {me} was interrupted: {reason}")
        if time.monotonic() > deadline:
            missing = ", ".join(str(k) for k in range(1, nnodes) if k not in peers)
            also = f"; rejected: {'; '.join(rejected)}" if rejected else ""
            raise fail(FAILED, f"rendezvous: node(s) {missing} did not join {me} at {where} "
                                 f"within {rdzv_timeout_s:g} s{also}")
        for ready in readable([listener, *pending, *(p.channel for p in peers.values())], TICK_S):
            if ready is listener:
                try:
                    sock, _ = listener.accept()
                    pending.append(Channel(sock))
                except OSError:
                    pass
                continue
            peer = next((p for p in peers.values() if p.channel is ready), None)
            try:
                messages = ready.receive()
            except ChannelClosed as closed:
                if peer is None:
                    pending.remove(ready)
                    continue
                raise fail(FAILED, f"rendezvous: {peer.label} lost contact ({closed})") from None
            for message in messages:
                if peer is None and isinstance(message.get("join"), dict):
                    pending.remove(ready)
                    admit(ready, message["join"])
                    break
                if peer is not None and "fail" in message:
                    status = message.get("status") if message.get("status") in VERBS else FAILED
                    raise fail(FAILED, f"rendezvous: {peer.label} {VERBS[status]}: {message['fail']}")
        for peer in peers.values():
            if peer.channel.silent_for() > heartbeat_timeout_s:
                raise fail(FAILED, f"rendezvous: {peer.label} lost contact "
                                     f"(no heartbeat for {heartbeat_timeout_s:g} s)")
            peer.channel.heartbeat_if_due()

    for channel in pending:
        channel.close()
    listener.close()
    torch_port = free_port("")  # torch's TCPStore listens on every address of node 0
    for peer in peers.values():
        peer.channel.send({"go": {"torch_port": torch_port}})
    return CoordinatorLink(node_name, peers, heartbeat_timeout_s, torch_port)


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
