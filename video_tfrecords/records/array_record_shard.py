"""Random access to one array_record shard, through array_record's own reader (it checks hashes).

Also guards against a known crash: see `note_array_record_use`.
"""

from __future__ import annotations

import os
import threading

from video_tfrecords.records.checksums import CorruptRecordError
from video_tfrecords.util.fork_safe import ForkSafeLock

__all__ = ["ArrayRecordShard", "note_array_record_use"]

# The two reads TFDS offers, as array_record options: none of the read-ahead a
# sequential scan wants, which only wastes I/O on random access.
_ARRAY_RECORD_OPTIONS = "readahead_buffer_size:0,max_parallelism:0"
# Opening a file and indexing it happen once per process, even with reader threads
# (Grain's). Re-entrant: indexing opens the file.
_OPENING = ForkSafeLock(threading.RLock)


# array_record (riegeli) keeps process-wide state that a background thread serves; a
# process forked after array_record was read or written (up to about a minute after its
# last use) has the state but not the thread, and its first array_record read crashes
# it (a segfault). The pid of the process that used it, so that a forked child refuses
# with a clear error instead.
_ARRAY_RECORD_OPENED_IN: int | None = None


def note_array_record_use() -> None:
    """Records that this process has read or written array_record files (see above)."""
    global _ARRAY_RECORD_OPENED_IN
    _ARRAY_RECORD_OPENED_IN = os.getpid()


class ArrayRecordShard:
    """Random access to one array_record file through array_record's reader (it checks hashes)."""

    def __init__(self, path: str):
        self.path = path
        self._reader = None
        self._pid = None

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.__init__(state["path"])

    def _open(self):
        if self._reader is None or self._pid != os.getpid():  # a reader is not fork-safe
            with _OPENING:
                if self._reader is None or self._pid != os.getpid():
                    self._reader = self._new_reader()
                    self._pid = os.getpid()
        return self._reader

    def _new_reader(self):
        from array_record.python import array_record_module

        parent = _ARRAY_RECORD_OPENED_IN
        if parent is not None and parent != os.getpid():
            raise RuntimeError(
                f"Cannot read {self.path}: this process was forked from process {parent} after "
                "that one had read or written array_record files, and array_record's reader "
                "can crash such a child (a segfault: its background thread is not forked). "
                "Start the workers with spawn or forkserver (PyTorch: DataLoader(..., "
                "multiprocessing_context='forkserver')), or read nothing in the main process "
                "before they start."
            )
        try:
            reader = array_record_module.ArrayRecordReader(self.path, _ARRAY_RECORD_OPTIONS)
        except (RuntimeError, ValueError, OSError) as e:
            raise CorruptRecordError(f"{self.path}: cannot open as array_record: {e}") from e
        note_array_record_use()
        return reader

    def close(self) -> None:
        if self._reader is not None and self._pid == os.getpid():
            self._reader.close()
        self._reader = None

    def build_index(self) -> int:
        return self._open().num_records()

    def read_many(self, indices: list[int]) -> list[bytes]:
        reader = self._open()
        try:
            return reader.read(list(indices))
        except (RuntimeError, ValueError, OSError) as e:
            raise CorruptRecordError(f"{self.path}: records {indices} do not read: {e}") from e

    def read(self, index: int) -> bytes:
        return self.read_many([index])[0]
