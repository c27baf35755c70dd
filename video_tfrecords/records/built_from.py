"""`built_from.json`, what a dataset was built from (`ingest/provenance.py` collects and writes
it): the one reader of it, for a rebuild (which compares) and for readers
(`ClipSource.built_from`), and its video lines by name (`VideoLine`).

Per split, the manifest and one list per video line, in `VideoLine`'s order; one of
format 1 has no `ctime` and `content`.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from video_tfrecords.records import dataset_files
from video_tfrecords.util.errors import CorruptRecordError
from video_tfrecords.util.paths import is_remote

__all__ = ["FIELDS", "FIELDS_1", "FILE", "VideoLine", "read", "video_lines"]

FILE = "built_from.json"
# The largest record read: about 120 bytes a video (1 GB for 8 million), more with captions.
MAX_BYTES = 4 << 30


class VideoLine(NamedTuple):
    """One manifest line as the build found it; JSON writes it as the list it is."""

    line: int
    path: str  # as written in the manifest
    label: str | None
    annotation: dict | None  # a JSON Lines line's other keys
    file: str | None  # resolved
    size: int | None  # None: the file was missing
    mtime: int | None
    ctime: int | None = None  # format 2 on (`file_identity`)
    content: str | None = None  # the file's content fingerprint (format 2 on)

    @property
    def identity(self) -> tuple:
        """(size, mtime, ctime, content): what `file_identity` found of the file."""
        return self.size, self.mtime, self.ctime, self.content


FIELDS = VideoLine._fields
FIELDS_1 = FIELDS[: FIELDS.index("ctime")]  # format 1's video line


def video_lines(split: dict) -> list[VideoLine]:
    """A split's video lines (`record["splits"][name]`), by name."""
    return [VideoLine(*line) for line in split["videos"]]


def read(folder) -> dict | None:
    """The `built_from` of the dataset in `folder` (a local path or a URL), None if it has none
    (built before it was kept, or by other means); CorruptRecordError naming the file
    if it is not one."""
    path = os.path.join(os.fspath(folder), FILE)
    try:
        if not is_remote(path):
            return dataset_files.read_json(path, limit=MAX_BYTES)
        from etils import epath  # (TFDS's own dependency: a remote data dir is read through it)

        record = json.loads(epath.Path(path).read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise CorruptRecordError(f"{path} holds a JSON {type(record).__name__}, not an object.")
        return record
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        if isinstance(e, CorruptRecordError):
            raise
        raise CorruptRecordError(f"Cannot read {path}: {e}") from None
