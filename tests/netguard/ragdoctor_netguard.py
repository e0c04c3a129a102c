"""Fail loudly if anything opens a socket to a non-loopback address (tests must be offline)."""
from __future__ import annotations

import ipaddress
import socket

_original_connect = socket.socket.connect
_original_connect_ex = socket.socket.connect_ex


class NetworkAccessError(RuntimeError):
    pass


def _is_local(address) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guard(address) -> None:
    if not _is_local(address):
        raise NetworkAccessError(f"test tried to open a network connection to {address!r}; tests must be offline")


def _connect(self, address):
    _guard(address)
    return _original_connect(self, address)


def _connect_ex(self, address):
    _guard(address)
    return _original_connect_ex(self, address)


def install() -> None:
    socket.socket.connect = _connect
    socket.socket.connect_ex = _connect_ex
