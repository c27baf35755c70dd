"""Output arrays reused once released, so large clips do not land in fresh pages every call.

glibc serves an allocation above 32 MiB (10x3 test views of 256 are 94 MB) with
new pages from the kernel on every call, and the kernel zeroes and faults in
each of them: about half the cost of decoding the clip. In a process that runs
TensorFlow, smaller batches go the same way. An array kept here is handed out
again only when nothing refers to it or to its memory, so whoever keeps a
clip, or any view of it, keeps it to themselves. (A TF graph keeps an aligned
array a `tf.numpy_function` returns, not a copy, while any tensor uses it.)
"""

from __future__ import annotations

import sys

import numpy as np

from video_tfrecords.util.fork_safe import ForkSafeLock

__all__ = ["SHARED", "ArrayPool", "aligned_empty", "empty"]

_ALIGN = 4096  # page-aligned: TensorFlow takes a 64-byte aligned array without copying it
LARGE = 32 << 20  # glibc's largest mmap threshold: below it, freed memory is reused anyway


class ArrayPool:
    """Page-aligned uint8 arrays, each reused once nothing refers to it or its memory.

    At most `keep` arrays and `max_bytes` bytes are kept: past either, the least
    recently used free array makes room, else the new array is not kept.
    """

    def __init__(self, keep: int = 8, max_bytes: int = 2 << 30):
        self.keep = keep
        self.max_bytes = max_bytes
        self._arrays: list[np.ndarray] = []  # least recently used first
        self._lock = ForkSafeLock()

    def take(self, shape: tuple[int, ...]) -> np.ndarray:
        """A free array of `shape` (contents undefined)."""
        shape = tuple(shape)
        with self._lock:
            for i in range(len(self._arrays)):  # (a loop variable would hold a reference)
                if self._arrays[i].shape == shape and _is_free(self._arrays, i):
                    self._arrays.append(self._arrays.pop(i))
                    return self._arrays[-1]
            size = int(np.prod(shape))
            while len(self._arrays) >= self.keep or self.nbytes + size > self.max_bytes:
                kept = range(len(self._arrays))
                free = next((i for i in kept if _is_free(self._arrays, i)), None)
                if free is None:
                    break
                del self._arrays[free]
            array = aligned_empty(shape)
            if len(self._arrays) < self.keep and self.nbytes + size <= self.max_bytes:
                self._arrays.append(array)
            return array

    def keep_at_least(self, count: int) -> None:
        """Raises `keep` to `count` (a pipeline with more batches in flight)."""
        with self._lock:
            self.keep = max(self.keep, count)

    @property
    def size(self) -> int:
        """How many arrays are kept for reuse."""
        return len(self._arrays)

    @property
    def nbytes(self) -> int:
        """The bytes of the arrays kept."""
        return sum(array.nbytes for array in self._arrays)


def _is_free(arrays: list, i: int) -> bool:
    """Whether only the list refers to `arrays[i]`, and only that array to its memory.

    (A view of a view refers to the memory's owner, not to the array it was cut from.)
    """
    return sys.getrefcount(arrays[i]) == 2 and sys.getrefcount(arrays[i].base) == 2


# One pool per process: a new pipeline (an evaluation pass every epoch, say) reuses the
# arrays of those before it instead of faulting in fresh ones.
SHARED = ArrayPool()


def aligned_empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised uint8 array of `shape` whose data starts on a page boundary."""
    size = int(np.prod(shape))
    raw = np.empty(size + _ALIGN, np.uint8)
    start = -raw.ctypes.data % _ALIGN
    return raw[start : start + size].reshape(shape)


def empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised uint8 array of `shape`: from `SHARED` when large, else plain NumPy's."""
    if int(np.prod(shape)) >= LARGE:
        return SHARED.take(shape)
    return np.empty(shape, np.uint8)
