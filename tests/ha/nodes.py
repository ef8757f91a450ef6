"""What the HA run's clusters share: timeouts, the error, free ports, tools, directories."""

from __future__ import annotations

import contextlib
import pathlib
import random
import shutil
import socket

#: How long a node gets to start (or stop) before :class:`ClusterError`.
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0


class ClusterError(Exception):
    """A node did not start, join or stop in time; names it and its log."""


#: Lines of a node's log an error message quotes.
LOG_LINES = 30


#: Where :func:`free_ports` looks: below Linux's ephemeral range (32768 and
#: up by default), so that no outgoing connection's local port takes one of
#: ours between the pick and a node's (re)start.
PORT_RANGE = (20000, 32000)


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 now, from :data:`PORT_RANGE`."""
    picked: list[int] = []
    candidates = random.sample(
        range(*PORT_RANGE), min(20 * count + 200, PORT_RANGE[1] - PORT_RANGE[0])
    )
    for port in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        picked.append(port)
        if len(picked) == count:
            return picked
    raise ClusterError(f"no {count} free ports in {PORT_RANGE}")


def find_tool(name: str, *dirs: str) -> str:
    for directory in dirs:
        candidate = pathlib.Path(directory, name)
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise ClusterError(f"{name} is not installed (looked in {', '.join(dirs) or 'PATH'})")
    return found


def clear_dir(workdir: pathlib.Path) -> None:
    if not workdir.exists():
        return
    for child in workdir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()
