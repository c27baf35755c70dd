"""What a build tells its user at its end: the counts per split, or how to resume.

Skip warnings scroll by during a long build; the summary makes what was skipped or noted
visible at the end (a build that skipped videos still succeeds, as TFDS builds do), and an
interrupted build says that it resumes.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence

from video_tfrecords.util.text import plural

__all__ = [
    "PreparedInfo",
    "build_summary",
    "errors_first",
    "interrupted_message",
    "lines_of",
    "print_last",
    "run_by_tfds_command",
    "without_tfds_chatter",
]


def lines_of(lines: int, videos: int) -> str:
    """`"13 lines (9 videos)"`; `"4 lines"` where each line is a video of its own."""
    return plural(lines, "line") + ("" if lines == videos else f" ({plural(videos, 'video')})")


def build_summary(
    name: str,
    lines_listed: Mapping[str, int],
    videos: Mapping[str, int],
    examples: Mapping[str, int],
    metadata: Mapping[str, list],
    info_path: str,
    cache: Sequence[str] = (),
) -> str:
    """Lines: per split, the manifest lines that gave examples of those listed (and the
    videos they name), examples written, lines skipped (a skip record each: the two add up
    to the lines listed) and notes; `cache`, what the build read back and kept; where the
    records of the skips and notes are."""
    lines = [f"{name}: built from your manifests."]
    for split, listed in lines_listed.items():
        skipped = sum(1 for r in metadata.get("skipped", ()) if r["split"] == split)
        noted = sum(1 for r in metadata.get("notes", ()) if r["split"] == split)
        lines.append(
            f"  {split}: {plural(examples.get(split, 0), 'example')} written from "
            f"{listed - skipped} of {lines_of(listed, videos[split])}; {skipped} skipped, "
            f"{noted} kept with a note"
        )
    lines += [f"  {line}" for line in cache]
    if any(metadata.get(kind) for kind in ("skipped", "notes")):
        lines.append(
            f"  Why each was skipped or noted: info.metadata['skipped'] and ['notes'] "
            f"({info_path})"
        )
    return "\n".join(lines)


def interrupted_message(videos_kept: int, cache_dir: str) -> str:
    """The one line an interrupted build prints."""
    return (
        f"Interrupted: {plural(videos_kept, 'video')} encoded so far kept in the cache "
        f"({cache_dir}); run the same command to resume."
    )


def run_by_tfds_command() -> bool:
    """Whether this process is the `tfds` command line (not a user's Python code): there an
    interrupted build ends with its one line, without a traceback."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return os.path.basename(getattr(main, "__file__", "") or "") == "tfds" or (
        spec is not None and spec.name.startswith("tensorflow_datasets.scripts.cli")
    )


_LAST: list[str] = []  # what the tfds command prints at exit, in order


def print_last(text: str) -> None:
    """Prints a build's summary so that it is the last thing a user reads: under the tfds
    command, at exit (after the dataset info TFDS prints when a build returns); else now."""
    if not run_by_tfds_command():
        print(text)
        return
    if not _LAST:
        atexit.register(lambda: print("\n\n".join(_LAST), flush=True))
    _LAST.append(text)


def errors_first(previous: Callable) -> Callable:
    """An excepthook for the tfds command: an error of this package (a bad manifest, config or
    manual dir, a strict build's stop) is printed as its message alone, each problem first as
    `FILE:LINE: reason`, not under a traceback through TFDS; any other error as before."""

    def hook(kind, error, trace):
        if not getattr(kind, "__module__", "").startswith("video_tfrecords."):
            return previous(kind, error, trace)
        problems = getattr(error, "problems", None)
        if problems:
            lines = [*problems, f"{len(problems)} problem(s) {error.WHAT}: fix them and run again."]
        else:
            lines = str(error).splitlines()
        print("\n".join(f"video_tfrecords: {line}" for line in lines), file=sys.stderr)
        return None

    return hook


class PreparedInfo:
    """A prepared dataset's `DatasetInfo` as the tfds command shows it once a build ends: where
    it is, in a line, instead of the ~130 terminal lines of its repr (the summary follows, and
    `tfds.builder(...).info` or dataset_info.json hold it whole). Everything else is the
    info's own."""

    def __init__(self, info) -> None:
        self._info = info

    def __getattr__(self, name: str):
        return getattr(self._info, name)

    def __repr__(self) -> str:
        folder = self._info.data_dir
        return f"{self._info.full_name}: its DatasetInfo is {os.path.join(folder, 'dataset_info.json')}"


# What TFDS 4.9.10 prints on stdout around a build (its own rule: always, whatever the
# verbosity): the sizes before it ("Unknown size" for a manual dataset) and where it went,
# both in the summary.
_TFDS_CHATTER = re.compile(r"(\x1b\[[0-9;]*m)*(Downloading and preparing dataset |Dataset \S+ "
                           r"downloaded and prepared to )")


class _WithoutChatter(io.TextIOBase):
    """stdout, but for TFDS's lines around a build (`_TFDS_CHATTER`): `print` writes a line's
    text, then its end."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.dropping = False

    def write(self, text: str) -> int:
        if _TFDS_CHATTER.match(text):
            self.dropping = not text.endswith("\n")
        elif self.dropping and text == "\n":
            self.dropping = False
        else:
            self.dropping = False
            self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def without_tfds_chatter():
    """A context in which TFDS's lines around a build are not printed, under the tfds command
    (a user's own Python keeps TFDS's output as it is)."""
    if not run_by_tfds_command():
        return contextlib.nullcontext()
    return contextlib.redirect_stdout(_WithoutChatter(sys.stdout))
