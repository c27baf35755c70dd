"""Reads a JSON Lines manifest (`train.jsonl`, ...): one object per video or part of a video.

Each line is an object with `path` and any of `label` (one class), `labels` (several),
`start`/`end` (seconds on the video's clock: the example holds only that span), `segments`
(`[{"label", "start", "end"}]`: labels with the time they are seen) and `captions`
(`["text", ...]` or `[{"text", "start", "end"}]`). Times are seconds from the video's first
frame, as the stored `timestamps` are (Charades, ActivityNet and MSR-VTT annotate so).

Every problem is reported as `FILE:LINE: reason`, all at once, like the text manifests':
bytes that are not UTF-8, a line that is not a JSON object, unknown keys (with the nearest
known one), a value of the wrong kind, a negative time, `start >= end`. Labels are checked
against `labels.txt` by `manifest.assign_labels`, with every other manifest's, and spans for
duplicates by `manifest.duplicate_problems`: a line with a problem is still read as far as it
can be (`LineError.partial`), so that those checks see it too and one run names every problem.
A UTF-8 byte order mark (Notepad, Excel) is read past.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etils import epath

KEYS = ("path", "label", "labels", "start", "end", "segments", "captions")
_FIELDS = frozenset(KEYS) - {"path", "label"}  # the keys that ask for features
_TIMED = ("start", "end")


@dataclasses.dataclass(frozen=True)
class Annotation:
    """What a JSON Lines line says beyond `path` and `label`; times in seconds."""

    labels: tuple[str, ...] = ()  # `labels`, as written (names or ids)
    start: float | None = None  # the span's start, None: the video's first frame
    end: float | None = None  # the span's end, None: the video's end
    segments: tuple[tuple[str, float, float], ...] = ()  # (label, start, end)
    captions: tuple[tuple[str, float | None, float | None], ...] = ()  # (text, start, end)
    fields: frozenset[str] = frozenset()  # the keys the line had (which features it asks for)

    @property
    def span(self) -> tuple[float, float]:
        """(start, end) of the span, the whole video being (0, inf)."""
        return (self.start or 0.0, math.inf if self.end is None else self.end)

    def all_labels(self) -> tuple[str, ...]:
        """`labels`, then each segment's label."""
        return self.labels + tuple(label for label, _, _ in self.segments)


@dataclasses.dataclass(frozen=True)
class Partial:
    """What a line with problems says, as far as it could be read: its labels are checked
    and (when `span_known`) its span against the others' as a good line's would be."""

    path: str
    label: str | None
    annotation: Annotation
    span_known: bool  # `start`/`end` read as written (no bad value, no misspelt time key)


class LineError(ValueError):
    """One line's problems (each a reason, without FILE:LINE), and what could be read of it."""

    def __init__(self, reasons: list[str], partial: Partial | None = None):
        self.reasons, self.partial = reasons, partial
        super().__init__("; ".join(reasons))


def without_bom(data: bytes) -> tuple[bytes, str | None]:
    """`data` without a UTF-8 byte order mark (Notepad and Excel write one), and a problem
    for a UTF-16 file (Notepad's "Unicode"), which is not UTF-8 at all."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return b"", "the file is UTF-16 (it starts with a UTF-16 byte order mark): save it as UTF-8"
    return data.removeprefix(codecs.BOM_UTF8), None


def not_utf8(raw: bytes) -> str | None:
    """Where a line's bytes stop being UTF-8, in words; None when they are UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1} ({e.reason})"
    return None


def decode_lines(data: bytes) -> list[tuple[int, str | None, str | None]]:
    """(line number, text, problem) for each line of `data` (lines end at \\n alone: JSON
    strings may hold U+2028): a line that is not UTF-8 gives None and where its first bad
    byte is."""
    lines = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append((number, raw.decode("utf-8").rstrip("\r"), None))
        except UnicodeDecodeError:
            lines.append((number, None, not_utf8(raw)))
    return lines


def parse_object(text: str) -> tuple[str, str | None, Annotation] | None:
    """(path, label, annotation) of one line; None for a blank line. Raises LineError, with
    what could be read of the line (`Partial`) when it names a path."""
    if not text.strip():
        return None
    try:
        line = json.loads(text)
    except json.JSONDecodeError as e:
        raise LineError([f"not JSON: {e.msg} at column {e.colno}"]) from None
    if not isinstance(line, dict):
        raise LineError([f'expected a JSON object {{"path": ...}}, got {type(line).__name__}'])
    unknown = [key for key in line if key not in KEYS]
    reasons = [_unknown(key) for key in unknown]
    if "\\u" in text:  # a lone surrogate comes only from an escape: UTF-8 cannot hold one
        lone = _surrogates(line)
        reasons += [f"{where} is not valid Unicode (a lone surrogate)" for where in lone]
    path = line.get("path")
    if not isinstance(path, str) or not path.strip():
        reasons.append('"path" must be a non-empty string (the video, as in a text manifest)')
        path = None
    label = _label(line["label"], '"label"', reasons) if "label" in line else None
    labels = []
    if "labels" in line:
        if isinstance(line["labels"], list):
            labels = [_label(v, f'"labels"[{i}]', reasons) for i, v in enumerate(line["labels"])]
        else:
            reasons.append('"labels" must be a list of class names or ids')
    before = len(reasons)
    start, end = (_time(line, key, reasons) if key in line else None for key in _TIMED)
    if start is not None and end is not None and start >= end:
        reasons.append(f'"start" ({start:g}) must be before "end" ({end:g})')
    span_known = len(reasons) == before and not any(_nearest(key) in _TIMED for key in unknown)
    segments = _items(line, "segments", reasons, _segment)
    captions = _items(line, "captions", reasons, _caption)
    annotation = Annotation(
        labels=tuple(label for label in labels if label is not None),
        start=start,
        end=end,
        segments=tuple(segments),
        captions=tuple(captions),
        fields=frozenset(line) & _FIELDS,
    )
    if reasons:
        partial = None if path is None else Partial(path, label, annotation, span_known)
        raise LineError(reasons, partial)
    return path, label, annotation


def read_lines(path: epath.Path) -> tuple[list[tuple], list[str], list[tuple]]:
    """(line number, path, label, annotation) for each video line of a JSON Lines manifest;
    its problems; (line number, `Partial`) for each line with problems that names a path."""
    lines, problems, partial, name = [], [], [], str(path)
    data, problem = without_bom(path.read_bytes())
    if problem:
        problems.append(f"{name}:1: {problem}")
    for number, text, problem in decode_lines(data):
        if problem is not None:
            problems.append(f"{name}:{number}: {problem}")
            continue
        try:
            parsed = parse_object(text)
        except LineError as e:
            problems += [f"{name}:{number}: {reason}" for reason in e.reasons]
            if e.partial is not None:
                partial.append((number, e.partial))
            continue
        if parsed is not None:
            lines.append((number, *parsed))
    return lines, problems, partial


def _nearest(key: str) -> str | None:
    """The known key nearest to an unknown one (a misspelling), if any is near."""
    near = difflib.get_close_matches(key, KEYS, n=1)
    return near[0] if near else None


def _unknown(key: str) -> str:
    near = _nearest(key)
    hint = f" (did you mean {near!r}?)" if near else ""
    return f"unknown key {key!r}{hint}; known keys: {', '.join(KEYS)}"


def _surrogates(value, where: str = "") -> list[str]:
    """Where strings (keys or values) hold lone surrogates, which UTF-8 cannot store."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return [where or "a string"]
        return []
    if isinstance(value, dict):
        return [w for k, v in value.items() for w in _surrogates(k, "a key") + _surrogates(v, k)]
    if isinstance(value, list):
        return [w for item in value for w in _surrogates(item, where)]
    return []


def _label(value, what: str, reasons: list[str]) -> str | None:
    """A label as written: a non-empty string or an int id >= 0 (kept as its digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.strip() == value and value:
        return value
    reasons.append(f"{what} holds {value!r}: a class name (no outer spaces) or an id >= 0")
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _time(line: dict, key: str, reasons: list[str], within: str = "") -> float | None:
    value = line[key]
    if _is_number(value) and value >= 0:
        return float(value)
    reasons.append(f'{within}"{key}" must be a number of seconds >= 0, got {value!r}')
    return None


def _items(line: dict, key: str, reasons: list[str], parse) -> list:
    """The parsed items of list `key` (none when absent); a problem for each bad one."""
    if key not in line:
        return []
    if not isinstance(line[key], list):
        reasons.append(f'"{key}" must be a list')
        return []
    items = [parse(item, f"{key}[{i}]: ", reasons) for i, item in enumerate(line[key])]
    return [item for item in items if item is not None]


def _timed(item, within: str, needed: tuple[str, ...], reasons: list[str]):
    """(start, end) of a list item that must hold exactly `needed`; None with its problems."""
    if not isinstance(item, dict) or set(item) != set(needed):
        shown = sorted(item) if isinstance(item, dict) else type(item).__name__
        reasons.append(f"{within}expected an object with keys {', '.join(needed)}, got {shown}")
        return None
    before = len(reasons)
    start, end = (_time(item, key, reasons, within) for key in _TIMED)
    if len(reasons) == before and start >= end:
        reasons.append(f'{within}"start" ({start:g}) must be before "end" ({end:g})')
    return None if len(reasons) > before else (start, end)


def _segment(item, within: str, reasons: list[str]):
    times = _timed(item, within, ("label", "start", "end"), reasons)
    if times is None:
        return None
    label = _label(item["label"], f'{within}"label"', reasons)
    return None if label is None else (label, *times)


def _caption(item, within: str, reasons: list[str]):
    if isinstance(item, str):
        return (item, None, None)
    times = _timed(item, within, ("text", "start", "end"), reasons)
    if times is None:
        return None
    if not isinstance(item["text"], str):
        reasons.append(f'{within}"text" must be a string, got {item["text"]!r}')
        return None
    return (item["text"], *times)
