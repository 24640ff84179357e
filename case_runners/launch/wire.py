"""Newline-delimited JSON over one TCP connection between two launchers, with heartbeat bookkeeping.

Every message is one JSON object on one line. Any message (heartbeats included) proves the peer alive.
"""

from __future__ import annotations

import json
import select
import socket
import time
from typing import Any

HEARTBEAT_S = 1.0
SEND_TIMEOUT_S = 2.0  # a peer whose kernel buffer stays full this long counts as lost
MAX_LINE = 1 << 20


class ChannelClosed(Exception):
    """The peer closed or reset the connection, or sent something that is not a message."""


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(SEND_TIMEOUT_S)  # reads only happen when select says there is data
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        try:
            host, port = sock.getpeername()[:2]
            self.peer = f"{host}:{port}"
        except OSError:  # reset already: the first read reports it
            self.peer = "?"
        self.buffer = b""
        self.last_heard = self.last_sent = time.monotonic()
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: dict[str, Any]) -> bool:
        """Send one message; False (and the channel closed) when the peer is gone."""
        if self.closed:
            return False
        try:
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            self.close()
            return False
        self.last_sent = time.monotonic()
        return True

    def heartbeat_if_due(self) -> None:
        if time.monotonic() - self.last_sent >= HEARTBEAT_S:
            self.send({"heartbeat": time.time()})

    def silent_for(self) -> float:
        return time.monotonic() - self.last_heard

    def receive(self) -> list[dict[str, Any]]:
        """The complete messages that have arrived (call when select says readable); ChannelClosed at EOF."""
        try:
            data = self.sock.recv(65536)
        except (TimeoutError, BlockingIOError):
            return []
        except OSError as exc:
            self.close()
            raise ChannelClosed(exc.strerror or str(exc)) from None
        if not data:
            self.close()
            raise ChannelClosed("connection closed")
        self.last_heard = time.monotonic()
        self.buffer += data
        messages = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                self.close()
                raise ChannelClosed(f"not a perfplay launcher message: {line[:80]!r}")
            messages.append(message)
        if len(self.buffer) > MAX_LINE:
            self.close()
            raise ChannelClosed("not a perfplay launcher (line too long)")
        return messages

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()


def readable(channels: list[Any], timeout_s: float) -> list[Any]:
    """The channels (or sockets) with data or EOF waiting, after at most timeout_s seconds."""
    live = [c for c in channels if not getattr(c, "closed", False)]
    if not live:
        time.sleep(max(0.0, timeout_s))
        return []
    ready, _, _ = select.select(live, [], [], max(0.0, timeout_s))
    return ready
