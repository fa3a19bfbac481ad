"""The systemd notify protocol (sd_notify(3)), written out rather than linked.

It is one datagram to a socket named in the environment, so a dependency on libsystemd or a
third-party wrapper would add more risk than it removes. Sending never raises: a supervisor
that went away must not take the control loop down with it.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


def notify(*fields: str) -> bool:
    """Send ``READY=1``, ``STATUS=…``, ``WATCHDOG=1``, ``STOPPING=1`` …; False when not sent.

    Without ``$NOTIFY_SOCKET`` (not started by systemd, or not ``Type=notify``) nothing happens.
    """
    address = os.environ.get("NOTIFY_SOCKET")
    if not address or not fields:
        return False
    if address.startswith("@"):  # abstract namespace: the name starts with a NUL byte
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto("\n".join(fields).encode(), address)
    except OSError as exc:
        log.debug("sd_notify to %r failed: %s", address, exc)
        return False
    return True


def watchdog_interval_s() -> float | None:
    """How often to send ``WATCHDOG=1``: half of ``WatchdogSec=``, or None without a watchdog.

    ``WATCHDOG_PID`` names the process the watchdog is meant for; a child that inherited the
    environment (or a PID that does not parse) must not ping on its parent's behalf.
    """
    pid = os.environ.get("WATCHDOG_PID")
    if pid is not None and pid.strip() != str(os.getpid()):
        return None
    try:
        usec = int(os.environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2_000_000 if usec > 0 else None
