"""A lock that a forked child always gets unheld.

fork copies a lock in the state it was in: held by a thread of the parent that
the child does not have, it is never released there, and the child's first
use hangs. DataLoader and Grain workers fork readers that other threads use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

__all__ = ["ForkSafeLock"]


class ForkSafeLock:
    """A `threading.Lock` (or RLock, by `factory`) replaced by a fresh one in a forked child."""

    def __init__(self, factory: Callable[[], object] = threading.Lock):
        self._factory = factory
        self._lock = factory()
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._lock = self._factory()

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, *exc_info) -> None:
        self._lock.__exit__(*exc_info)
