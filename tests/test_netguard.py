import socket
import subprocess
import sys

import pytest
from ragdoctor_netguard import NetworkAccessError


def test_non_loopback_connection_is_refused():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with pytest.raises(NetworkAccessError):
        s.connect(("93.184.216.34", 80))
    s.close()


def test_loopback_is_allowed():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.socket()
    c.connect(srv.getsockname())
    c.close()
    srv.close()


def test_subprocesses_are_guarded_too():
    code = "import socket; socket.socket().connect(('8.8.8.8', 53))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "tests must be offline" in proc.stderr
