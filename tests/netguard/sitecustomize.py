"""Loaded by every Python process the tests start (PYTHONPATH points here): refuse non-loopback sockets."""
import os

if os.environ.get("RAGDOCTOR_NETGUARD") == "1":
    import ragdoctor_netguard

    ragdoctor_netguard.install()
