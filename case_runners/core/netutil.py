"""Small network helpers (stdlib only: the launcher uses them)."""

from __future__ import annotations

import errno
import fcntl
import socket
import struct

SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's (primary) IPv4 address


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _bound(addr: str, port: int, backlog: int | None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A previous round's connections in TIME_WAIT do not hold the port; a live listener still does.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((addr, port))
        if backlog is not None:
            sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def bind_tcp(addr: str, port: int, backlog: int | None = None) -> socket.socket:
    """A TCP socket bound to addr:port (listening when backlog is given), or to every address when addr is
    not one of this host's (a NAT or DNS name). Raises OSError when the port is taken."""
    try:
        return _bound(addr, port, backlog)
    except OSError as exc:
        if not (isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL):
            raise
    return _bound("", port, backlog)


class NoInterfaceError(OSError):
    """No local network interface could be matched to an address."""


def source_address(addr: str, port: int = 9) -> str:
    """The local IPv4 address this host sends from to reach addr (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((addr, port))
        return sock.getsockname()[0]


def interface_addresses() -> dict[str, str]:
    """{interface name: IPv4 address} for every interface that has one."""
    found = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _index, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # down, or no IPv4 address
                continue
            found[name] = socket.inet_ntoa(packed[20:24])
    return found


def interface_for(addr: str) -> str:
    """Name of the network interface this host uses to reach addr (e.g. "eth0"; "lo" for 127.0.0.1)."""
    try:
        local = source_address(addr)
    except OSError as exc:
        raise NoInterfaceError(f"no route from this host to {addr}: {exc.strerror or exc}") from None
    addresses = interface_addresses()
    for name, address in addresses.items():
        if address == local:
            return name
    listed = ", ".join(f"{n}={a}" for n, a in sorted(addresses.items())) or "none"
    raise NoInterfaceError(f"this host reaches {addr} from {local}, but no interface has that address as its "
                           f"primary IPv4 address (interfaces: {listed})")
