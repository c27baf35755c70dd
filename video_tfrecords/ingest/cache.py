"""The build's cache of encoded videos: what makes a killed build resumable.

`cached` wraps the encoding of one video: it reads the video's entry back if
the cache holds it whole, else runs the encoding and stores what it makes, one
file per example (piece); the split writer reads the examples from there.
An entry is keyed on the video's content (`file_identity`: wherever the file is
now, under whatever name) and on the config fields that shape its frames, so a
rerun of the same build, or a build of the same videos moved elsewhere, finds the
videos already encoded and does not decode them again. An entry
counts only once its `done.json` exists, which is written last and lists every
file's size and CRC32C: an entry cut short by a kill, or damaged since, is
re-encoded, never written as data. Paths go through `etils.epath`, so the
cache can live on any file system the build's data dir can (GCS for Beam on
Dataflow).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping

from awscrt import checksums
from etils import epath

# Bump when the content of an entry changes meaning: old entries are then ignored.
# 2: keyed on the manifest's name for the video too; holds only what the video gives.
# 3: each example holds its frames' CRC32C (frame_crc32c); files are checked by CRC32C
#    (awscrt's: 5x zlib's CRC32 here, and the build process checks every file it reads).
# 4: frames timed by FFmpeg's best-effort rule and deinterlaced; audio with audio_rate.
# 5: a task may hold several spans of its video; each example says which (`part`, `segment`).
# 6: keyed on the video file's content, not its path; notes on spans without their FILE:LINE;
#    `start_frame` is the example's first frame's index in the video (a span's was 0); the
#    summary's notes say which span they are of ([part, reason]).
FORMAT = 6
DONE = "done.json"


class CacheError(OSError):
    """An entry's files do not match its done.json: it was damaged after it was written."""


def key(video: Mapping, config_fields: Mapping) -> str:
    """Hex key of one video's entry under one config: `video` says what it holds (the file's
    content fingerprint, the spans, which copy), `config_fields` how its frames are made."""
    identity = {"format": FORMAT, "video": dict(video), "config": dict(config_fields)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


@dataclasses.dataclass(frozen=True)
class Entry:
    """A finished entry: its folder, its files (size, crc32c) and what the build noted."""

    folder: str
    files: tuple[tuple[str, int, int], ...]  # (name, size, crc32c), in example order
    summary: dict  # what the video gave beside its examples, as given to EntryWriter.finish
    reused: bool = False  # read back (a resumed build's, a rebuild's), not encoded by this build

    def parts(self) -> Iterator[dict]:
        """Yields the dicts given to `EntryWriter.add`, one file read at a time, each checked."""
        for name, size, crc in self.files:
            yield pickle.loads(self.read(name, size, crc))

    def read(self, name: str, size: int, crc: int) -> bytes:
        """One file's bytes; CacheError if they are not those done.json lists."""
        data = (epath.Path(self.folder) / name).read_bytes()
        if len(data) != size or checksums.crc32c(data) != crc:
            raise CacheError(f"{self.folder}/{name}: size or CRC32C differs from its {DONE}")
        return data


class EntryWriter:
    """Writes one video's examples into a fresh entry folder, then its done.json."""

    def __init__(self, folder: epath.Path):
        if folder.exists():
            folder.rmtree()
        folder.mkdir(parents=True)
        self.folder = folder
        self.files: list[tuple[str, int, int]] = []

    def add(self, part: dict) -> None:
        data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        name = f"{len(self.files):05d}.pickle"
        (self.folder / name).write_bytes(data)
        self.files.append((name, len(data), checksums.crc32c(data)))

    def finish(self, summary: dict) -> Entry:
        """Marks the entry complete (the done file is written whole, then renamed)."""
        done = {"format": FORMAT, "files": self.files, "summary": summary}
        temporary = self.folder / (DONE + ".partial")
        temporary.write_text(json.dumps(done))
        temporary.rename(self.folder / DONE)
        return Entry(str(self.folder), tuple(map(tuple, self.files)), summary)

    def discard(self) -> None:
        if self.folder.exists():
            self.folder.rmtree()


class Cache:
    """The entries of one build config, in `root` (one folder per video key)."""

    def __init__(self, root: epath.PathLike):
        self.root = epath.Path(root)

    def folder(self, key: str) -> epath.Path:
        return self.root / key[:2] / key

    def has(self, key: str) -> bool:
        """Whether `key` has a finished entry (unchecked: `lookup` checks its files)."""
        return (self.folder(key) / DONE).exists()

    def lookup(self, key: str) -> Entry | None:
        """The complete, undamaged entry of `key`, or None (a damaged one is removed)."""
        folder = self.folder(key)
        try:
            done = json.loads((folder / DONE).read_text())
            entry = Entry(str(folder), tuple(map(tuple, done["files"])), done["summary"], True)
            if done["format"] != FORMAT:
                raise CacheError(f"{folder}: format {done['format']}, expected {FORMAT}")
            for file in entry.files:
                entry.read(*file)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            if folder.exists():
                folder.rmtree()
            return None
        return entry

    def writer(self, key: str) -> EntryWriter:
        return EntryWriter(self.folder(key))

    def keep_only(self, keys: Iterable[str]) -> int:
        """Removes every entry, finished or not, but those of `keys` (what a finished build
        read): entries of videos gone from the manifests, of files since replaced, of an
        earlier config. The cache then holds one copy of the dataset's examples, not one per
        build. Returns the number removed."""
        keys, removed = set(keys), 0
        if not self.root.exists():
            return 0
        for prefix in self.root.iterdir():
            if len(prefix.name) != 2 or not prefix.is_dir():
                continue  # not a key's folder (a distributed build's marks)
            for folder in prefix.iterdir():
                if folder.name not in keys:
                    folder.rmtree()
                    removed += 1
        return removed

    def count(self) -> int:
        """The number of finished entries (videos that a rerun does not encode again)."""
        return sum(1 for _ in self.root.glob(f"*/*/{DONE}")) if self.root.exists() else 0


def cached(
    root: epath.PathLike, key: Callable[[], str], encode: Callable[[Callable[[dict], None]], dict]
) -> Entry:
    """One video's entry in the cache at `root`: read back if it is there whole, else encoded.

    `key()` names the entry; an OSError from it (the video cannot be found) counts as
    a miss, so that `encode` says precisely why the video cannot be read.
    `encode(add)` encodes the video, giving each example (piece) to `add` as soon as
    it is made (written at once: memory holds one), and returns the entry's summary.
    The entry's folder is made at the first example, and removed if `encode` or the
    writing raises: only a finished entry is ever read back.
    """
    store = Cache(root)
    try:
        entry = store.lookup(key())
    except OSError:
        entry = None
    if entry is not None:
        return entry
    writer: EntryWriter | None = None

    def add(part: dict) -> None:
        nonlocal writer
        writer = writer or store.writer(key())
        writer.add(part)

    try:
        summary = encode(add)
        writer = writer or store.writer(key())
        return writer.finish(summary)
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
