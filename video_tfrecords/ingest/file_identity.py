"""A video file's identity to a rebuild: whether a file a build finds is one an earlier build
encoded, wherever it is now (another disk, mount, machine or bucket; copied with or without
its times).

A file's identity is what its stat tells (size; modification and status-change times, in ns,
for a local file; size and modification time from etils.epath for a remote one) and its
content's `fingerprint`: SHA-256 of its size and of three 16 KiB blocks, the first, the middle
and the last (the whole file below 48 KiB), 128 bits kept. The blocks hold the container's
header and index in the formats corpora come in (MP4/MOV's `moov`, at either end; Matroska's
header and cues; AVI's `hdrl` and `idx1`), which list every frame's size and place, so
another video, a re-encode or a cut one has another fingerprint; a copy has the same.

Reading costs three reads a file, so `identities` reads only the files it cannot vouch for:
one at the path, size and times an earlier `built_from` (`known`) found takes its
fingerprint. Every write through the file system changes those times (even one that then
puts the modification time back changes the status-change time, which no program can set),
and an object in a bucket gets a new time whenever it is written.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from etils import epath

from video_tfrecords.util.paths import is_remote

BLOCK = 16 * 1024  # bytes of each of the three blocks a fingerprint reads
DIGITS = 32  # hex digits kept of the SHA-256: 128 bits
STAT_THREADS, READ_THREADS = 32, 8  # threads once stats are slow; threads reading local blocks
PROBE, SLOW_STAT = 256, 50e-6  # files stat'ed first; seconds a stat that makes threads pay
CHUNK, READ_CHUNK = 2048, 64  # files a thread stats, reads, at once


def stat(path: str) -> tuple[str, int | None, int | float | None, int | None]:
    """(resolved path, size, mtime, ctime) of a file: os.stat's nanoseconds for a local file;
    for a remote one, etils.epath's size and time, and no ctime. Nones for a file not found."""
    try:
        if is_remote(path):
            found = epath.Path(path).stat()
            return path, found.length, found.mtime, None
        found = os.stat(path)
        return os.path.abspath(path), found.st_size, found.st_mtime_ns, found.st_ctime_ns
    except OSError:
        return path, None, None, None


def fingerprint(path: str, size: int) -> str:
    """The content's fingerprint (hex) of the file at `path`, of `size` bytes: three reads
    (one for a file below 3 blocks). OSError if it cannot be read."""
    offsets = [0] if size <= 3 * BLOCK else [0, (size - BLOCK) // 2, size - BLOCK]
    length = size if size <= 3 * BLOCK else BLOCK
    digest = hashlib.sha256(f"{size}\n".encode())
    if is_remote(path):
        with epath.Path(path).open("rb") as f:
            for offset in offsets:
                f.seek(offset)
                digest.update(f.read(length))
        return digest.hexdigest()[:DIGITS]
    descriptor = os.open(path, os.O_RDONLY)
    try:
        for offset in offsets:
            digest.update(os.pread(descriptor, length, offset))
    finally:
        os.close(descriptor)
    return digest.hexdigest()[:DIGITS]


def identity(path: str, known: tuple | None = None) -> tuple:
    """(resolved path, size, mtime, ctime, fingerprint) of the file at `path`, the fingerprint
    read unless `known` (size, mtime, ctime, fingerprint) was found with the same stat.
    Nones for a file not found; a fingerprint None for one that cannot be read."""
    found = stat(path)
    return found + (_content(found, known),)


def _content(found: tuple, known: tuple | None, read: bool = True) -> str | None:
    """The fingerprint of a stat'ed file: `known`'s if it has the same stat, else read (unless
    not `read`); None for a file not found or not readable."""
    if found[1] is None:
        return None
    if known is not None and tuple(known[:3]) == found[1:] and known[3] is not None:
        return known[3]
    if not read:
        return None
    try:
        return fingerprint(found[0], found[1])
    except OSError:
        return None


def current(path: str, planned: tuple | None) -> str:
    """The fingerprint of the file at `path` now, for the cache key of a video about to be
    encoded: `built_from`'s (`planned`: size, mtime, ctime, fingerprint) if its stat is the same,
    else read again (the file changed since). OSError if it cannot be found or read."""
    found = stat(path)
    if found[1] is None:
        raise FileNotFoundError(path)
    vouched = _content(found, planned, read=False)
    return vouched if vouched is not None else fingerprint(found[0], found[1])


def identities(files: Sequence[str], known: Mapping[str, tuple] | None = None) -> list[tuple]:
    """`identity` of each file, `known` giving (size, mtime, ctime, fingerprint) by resolved
    path (an earlier `built_from`'s). Stats in this thread while they answer fast (a local disk,
    where threads would only contend for the GIL), in STAT_THREADS threads once they do not
    (a network file system answers in parallel); the files not vouched for are read in
    threads (reading and hashing release the GIL)."""
    known = known or {}
    found = _stats(files)
    contents = [_content(f, known.get(f[0]), read=False) for f in found]
    todo = [i for i, f in enumerate(found) if f[1] is not None and contents[i] is None]
    if todo:
        remote = is_remote(found[todo[0]][0])
        chunks = [todo[i : i + READ_CHUNK] for i in range(0, len(todo), READ_CHUNK)]
        with ThreadPoolExecutor(STAT_THREADS if remote else READ_THREADS) as pool:
            read = pool.map(lambda chunk: [_content(found[i], None) for i in chunk], chunks)
            for chunk, values in zip(chunks, read):
                for i, value in zip(chunk, values):
                    contents[i] = value
    return [f + (content,) for f, content in zip(found, contents)]


def _stats(files: Sequence[str]) -> list[tuple]:
    start, probe = time.perf_counter(), [stat(file) for file in files[:PROBE]]
    rest = files[PROBE:]
    if not rest or (time.perf_counter() - start) / len(probe) < SLOW_STAT:
        return probe + [stat(file) for file in rest]
    chunks = [rest[i : i + CHUNK] for i in range(0, len(rest), CHUNK)]
    with ThreadPoolExecutor(STAT_THREADS) as pool:
        found = pool.map(lambda chunk: [stat(file) for file in chunk], chunks)
        return probe + [one for chunk in found for one in chunk]
