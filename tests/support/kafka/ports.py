"""Free TCP ports on loopback for the processes the tests start.

Kafka's controller quorum needs every node's ports before any node starts, so they are picked here
rather than bound as port 0 by each process. They are drawn from below Linux's ephemeral range
(`net.ipv4.ip_local_port_range`, 32768-60999 by default), where outgoing connections and port-0
binds of every other process on the machine take theirs, and each is checked free by binding it.
"""

from __future__ import annotations

import random
import socket

HOST = "127.0.0.1"
LOW, HIGH = 20000, 32767


def is_free(port: int, host: str = HOST) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int, host: str = HOST) -> list[int]:
    """`count` distinct ports nothing listens on right now."""
    rng = random.SystemRandom()
    out: list[int] = []
    for _ in range(count * 50):
        port = rng.randint(LOW, HIGH)
        if port not in out and is_free(port, host):
            out.append(port)
            if len(out) == count:
                return out
    raise RuntimeError(f"no {count} free TCP ports on {host} between {LOW} and {HIGH}")


def free_port(host: str = HOST) -> int:
    return free_ports(1, host)[0]


def accepts(port: int, host: str = HOST, timeout: float = 0.2) -> bool:
    """Whether something accepts TCP connections on the port."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True
