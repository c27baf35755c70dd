"""What the package does under the `tfds build` command (and only there): an error of its own
printed as its message, TFDS's INFO lines and chatter left out, the summary printed last.

The tfds command enters the package through `video_tfrecords/__init__.py`, which calls `setup`
when TFDS is loaded; a user's own Python keeps TFDS's output as it is. `drop_tfds_noise` is the
builder's: TFDS's warnings about this dataset's features, on every build.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import logging
import os
import re
import sys
from collections.abc import Callable

__all__ = [
    "PreparedInfo",
    "drop_tfds_noise",
    "errors_first",
    "print_last",
    "run_by_tfds_command",
    "setup",
    "without_tfds_chatter",
]


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
        path = os.path.join(self._info.data_dir, "dataset_info.json")
        return f"{self._info.full_name}: its DatasetInfo is {path}"


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


class _TfdsNoise(logging.Filter):
    """Drops the warnings TFDS 4.9.10 logs on every build of this dataset, which nothing a
    builder does avoids: `tfds.features.Video.to_json_content` reads the deprecated
    `FeatureConnector.dtype` itself, and the `tfds` command finds the folder of a first build
    without a `dataset_info.json` (it is about to write one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (
            message.startswith("`FeatureConnector.dtype` is deprecated")
            or (message.startswith("Variant folder ") and " has no " in message)
        )


_NOISE = _TfdsNoise()
_SET_UP: list[bool] = []  # the excepthook is installed once


def drop_tfds_noise() -> None:
    """Filters TFDS's warnings about this dataset's features out of absl's log (once)."""
    logging.getLogger("absl").addFilter(_NOISE)  # the same filter twice is kept once


def setup() -> None:
    """Under the tfds command: TFDS's noise filtered, errors of this package printed first
    (`errors_first`), TFDS's INFO lines off (the summary says what they say). Elsewhere,
    nothing."""
    if not run_by_tfds_command() or _SET_UP:
        return
    from absl import logging as absl_logging

    drop_tfds_noise()
    sys.excepthook = errors_first(sys.excepthook)
    absl_logging.set_verbosity(absl_logging.WARNING)
    _SET_UP.append(True)
