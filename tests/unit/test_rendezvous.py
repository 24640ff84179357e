"""Node 0's rendezvous state machine (launch/rendezvous.py Gathering), one transition at a time, over real loopback
connections: what each launcher is told, and the state and failure node 0 ends in. The whole launchers' rendezvous
is test_multinode_launcher.py's."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from case_runners.launch.rendezvous import ABORTED, GATHERING, READY, Gathering
from case_runners.launch.wire import Channel, ChannelClosed, readable
from case_runners.records.names import FAILED, INTERRUPTED

RUN = "run20260101000000-abcdef"


@pytest.fixture
def pairs() -> Iterator[list[tuple[Channel, Channel]]]:
    """Connected (node 0's end, the other launcher's end) channels, made with connect(); all closed after the test."""
    made: list[tuple[Channel, Channel]] = []
    yield made
    for ours, theirs in made:
        ours.close()
        theirs.close()


def connect(pairs: list[tuple[Channel, Channel]]) -> tuple[Channel, Channel]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    pair = (Channel(server), Channel(client))
    pairs.append(pair)
    return pair


def answers(channel: Channel) -> list[dict]:
    """What node 0 sent to the launcher at this end (sent before on loopback: once the first of it is there, the
    rest is too, and a short wait finds nothing more)."""
    got: list[dict] = []
    wait_s = 10.0
    while readable([channel], wait_s):
        try:
            got += channel.receive()
        except ChannelClosed:
            break
        wait_s = 0.05
    return got


def gathering(nnodes: int = 3, now: float = 100.0, heartbeat_timeout_s: float = 60.0) -> Gathering:
    return Gathering(node_name="host0", run_id=RUN, nnodes=nnodes, nproc=2, where="10.0.0.1:29500",
                     rdzv_timeout_s=30.0, heartbeat_timeout_s=heartbeat_timeout_s, now=now)


def join(rank, *, run_id: str = RUN, nnodes: int = 3, nproc: int = 2) -> list[dict]:
    return [{"join": {"node_rank": rank, "node_name": f"host{rank}", "run_id": run_id, "nnodes": nnodes,
                      "nproc": nproc}}]


def joined(g: Gathering, pairs, rank: int, now: float = 101.0) -> Channel:
    """A launcher that connected and joined as `rank`; its end."""
    ours, theirs = connect(pairs)
    assert g.connected(ours) == GATHERING
    g.received(ours, join(rank), now)
    return theirs


def test_each_join_is_welcomed_and_the_last_one_makes_node_0_ready(pairs):
    g = gathering()
    first = joined(g, pairs, 1)
    assert g.state == GATHERING and g.check(None, 102.0) == GATHERING
    assert answers(first) == [{"welcome": {"node_name": "host0", "wait_s": 29.0}}], "the rest of rdzv_timeout_s"
    second = joined(g, pairs, 2, now=110.0)
    assert g.state == READY and sorted(g.peers) == [1, 2] and g.pending == []
    assert answers(second) == [{"welcome": {"node_name": "host0", "wait_s": 20.0}}]
    assert g.check("SIGTERM", 200.0) == READY, "once ready, node 0 starts the round: no later check applies"


@pytest.mark.parametrize(("message", "why"), [
    (join(1, run_id="other"), f"its run id 'other' is not node 0's '{RUN}'"),
    (join(1, nproc=4), "it runs nnodes=3, nproc=4; node 0 runs nnodes=3, nproc=2"),
    (join(3), "node rank 3 is outside 1..2"),
    (join(0), "node rank 0 is outside 1..2"),
    (join("1"), "node rank 1 is outside 1..2"),
])
def test_a_join_of_another_run_layout_or_rank_is_rejected_and_named_at_the_deadline(pairs, capsys, message, why):
    g = gathering()
    ours, theirs = connect(pairs)
    g.connected(ours)
    assert g.received(ours, message, 101.0) == GATHERING
    assert answers(theirs) == [{"reject": why, "node_name": "host0"}] and ours.closed and g.pending == []
    assert why in capsys.readouterr().err
    assert g.check(None, 130.0) == GATHERING, "the deadline is inclusive"
    assert g.check(None, 130.5) == ABORTED
    assert g.failure is not None and g.failure.status == FAILED
    assert g.failure.reason.startswith("rendezvous: node(s) 1, 2 did not join node 0 (host0) at 10.0.0.1:29500 "
                                       "within 30 s; rejected: node ")
    assert g.failure.reason.endswith(why)


def test_a_rank_joined_twice_is_rejected_naming_the_first(pairs):
    g = gathering()
    joined(g, pairs, 1)
    again = joined(g, pairs, 1)
    (answer,) = answers(again)
    assert answer["reject"].startswith("node rank 1 has already joined from host1 (127.0.0.1:")
    assert sorted(g.peers) == [1] and g.state == GATHERING


def test_what_a_launcher_sends_before_its_join_and_after_it_is_not_a_join(pairs):
    g = gathering()
    ours, theirs = connect(pairs)
    g.connected(ours)
    assert g.received(ours, [{"heartbeat": 1}], 101.0) == GATHERING and g.pending == [ours]
    assert g.received(ours, [*join(1), *join(2)], 101.0) == GATHERING, "what came with a join is dropped"
    assert sorted(g.peers) == [1]
    assert g.received(ours, join(2), 102.0) == GATHERING and sorted(g.peers) == [1], "a joined node does not join"


def test_a_joined_node_that_fails_aborts_and_every_joined_node_is_told(pairs):
    g = gathering()
    one, two = joined(g, pairs, 1), joined(g, pairs, 2)
    assert g.state == READY
    assert answers(one) and answers(two)
    g.received(g.peers[2].channel, [{"fail": "SIGTERM", "status": INTERRUPTED}], 103.0)
    assert g.state == ABORTED and g.failure is not None
    assert (g.failure.status, g.failure.reason) == (FAILED, "rendezvous: node 2 (host2) was interrupted: SIGTERM")
    assert g.check(None, 1000.0) == ABORTED and g.failure.reason.endswith("SIGTERM"), "the first failure stays"
    g.close()
    told = {"abort": "rendezvous: node 2 (host2) was interrupted: SIGTERM", "status": FAILED}
    assert answers(one) == [told] and answers(two) == [told]


def test_a_launcher_gone_before_its_join_is_forgotten_and_a_joined_one_is_lost(pairs):
    g = gathering()
    ours, _ = connect(pairs)
    g.connected(ours)
    assert g.closed(ours, ChannelClosed("connection closed")) == GATHERING and g.pending == []
    joined(g, pairs, 1)
    assert g.closed(g.peers[1].channel, ChannelClosed("connection reset")) == ABORTED
    assert g.failure is not None and g.failure.reason == "rendezvous: node 1 (host1) lost contact (connection reset)"


def test_an_interrupted_node_0_aborts_telling_the_joined_nodes_it_was_interrupted(pairs):
    g = gathering()
    one = joined(g, pairs, 1)
    answers(one)
    waiting, _ = connect(pairs)
    g.connected(waiting)
    assert g.check("signal SIGINT", 102.0) == ABORTED
    assert g.failure is not None and (g.failure.status, g.failure.reason) == (INTERRUPTED, "signal SIGINT")
    g.close()
    assert answers(one) == [{"abort": "rendezvous: node 0 (host0) was interrupted: signal SIGINT", "status": FAILED}]
    assert waiting.closed, "a launcher that had not joined is closed, not told"


def test_a_joined_node_silent_past_the_heartbeat_timeout_is_lost(pairs):
    g = gathering(heartbeat_timeout_s=5.0)
    joined(g, pairs, 1)
    assert g.heartbeats() == GATHERING
    g.peers[1].channel.last_heard -= 6.0  # its last word, 6 s ago
    assert g.heartbeats() == ABORTED
    assert g.failure is not None
    assert g.failure.reason == "rendezvous: node 1 (host1) lost contact (no heartbeat for 5 s)"
