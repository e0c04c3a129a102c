"""Where the pytest plugin used to live; it is ``ragdoctor.pytest_plugin`` now (the ``pytest11`` entry point).

Kept so that ``from eval.pytest_plugin import GateFailed`` (and ``assert_gate``) go on working: the same objects as
``ragdoctor.GateFailed`` and ``ragdoctor.pytest_plugin.assert_gate``. This module registers no hook or fixture (the
entry point does); to load the plugin by hand, ``-p ragdoctor.pytest_plugin``. The one import of the ragdoctor layer
from eval/, for compatibility only: new code imports ``ragdoctor.GateFailed``."""
from __future__ import annotations

from ragdoctor import GateFailed
from ragdoctor.pytest_plugin import assert_gate

__all__ = ["GateFailed", "assert_gate"]
