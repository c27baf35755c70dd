"""The report as a picture (OpenCV; no plotting library): two rows of charts per split.

Panels: classes (from `labels` where the dataset stores them), durations,
stored frames, record sizes; frame rates, frame sizes, and the skipped /
noted videos, one row per kind of reason as the text report has them.
Continuous values are binned (`BINS`); categories get a horizontal bar each,
the most common first, their text whole (wrapped, never cut off); what does
not fit is counted ("+3 more"). 1500 px wide: it reads on a laptop's screen.
"""

from __future__ import annotations

import collections

import cv2
import numpy as np

from video_tfrecords.show import tiles
from video_tfrecords.show.report import (
    DatasetReport,
    SplitReport,
    class_counts,
    problem_groups,
    problem_text,
)
from video_tfrecords.util.text import plural

__all__ = ["BINS", "MAX_ROWS", "PANEL_H", "PANEL_W", "SCALE", "report_image"]

BINS = 20
PANEL_H, PANEL_W = 200, 300  # a panel; classes take two widths, the reasons three
SCALE, LINE = 0.45, 17  # Hershey simplex at 0.45: capitals 10 px tall
INK, BAR, PAPER = (30, 30, 30), (70, 110, 200), (255, 255, 255)
SKIPPED, NOTED = (210, 60, 60), (230, 160, 40)
MAX_ROWS = 8  # bars of a category panel; reasons listed a split
_NAMED_CLASSES = 9  # more classes than this: a histogram over class ids


def _text(image, text: str, x: int, y: int, colour=INK) -> None:
    """`text` with its baseline at (x, y); the caller makes it fit (`tiles.wrapped`)."""
    cv2.putText(image, tiles.ascii_text(text), (x, y), tiles.FONT, SCALE, colour, 1, cv2.LINE_AA)


def _width(text: str) -> int:
    return tiles.text_width(tiles.ascii_text(text), SCALE)


def _paper(height: int, width: int) -> np.ndarray:
    return np.full((height, width, 3), PAPER, np.uint8)


def _title(image, lines: list[str]) -> int:
    """The panel's title lines (`_title_lines`); returns the y under them."""
    for i, line in enumerate(lines):
        _text(image, line, 6, 16 + i * LINE)
    return 16 + len(lines) * LINE


def _title_lines(title: str, width: int) -> list[str]:
    return tiles.wrapped([title], width - 8, SCALE)


def _histogram(title: str, counts, left: str = "", right: str = "", width=PANEL_W) -> np.ndarray:
    """Vertical bars of `counts` under `title`, `left`/`right` under the ends of the axis."""
    image = _paper(PANEL_H, width)
    top = _title(image, _title_lines(title, width)) + 6
    counts = np.asarray(counts, np.float64)
    bottom, x0, x1 = PANEL_H - 24, 8, width - 8
    cv2.line(image, (x0, bottom), (x1, bottom), INK, 1)
    if not len(counts) or counts.max() <= 0:
        _text(image, "none", x0 + 4, (top + bottom) // 2)
        return image
    peak = f"max {counts.max():g}"
    _text(image, peak, x1 - _width(peak), top)
    step = (x1 - x0) / len(counts)
    for i, count in enumerate(counts):
        height = round((bottom - top - 6) * count / counts.max())
        a, b = round(x0 + i * step + (1 if step > 3 else 0)), round(x0 + (i + 1) * step) - 1
        cv2.rectangle(image, (a, bottom - height), (max(a, b), bottom), BAR, -1)
    _text(image, left, x0, bottom + 16)
    _text(image, right, x1 - _width(right), bottom + 16)
    return image


def _values(title: str, values: np.ndarray, unit: str) -> np.ndarray:
    values = values[np.isfinite(values)]
    if not len(values):
        return _histogram(title, [])
    counts, edges = np.histogram(values, bins=BINS)
    return _histogram(title, counts, _number(edges[0]) + unit, _number(edges[-1]) + unit)


def _number(value: float) -> str:
    """'2.4', '396', '4048' (no exponent)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _rows(title: str, rows: list, more: int = 0, width: int = PANEL_W) -> np.ndarray:
    """Horizontal bars: rows of (label, count, colour), each label after its count, wrapped
    to the panel; `more`: rows left out, said in a last line. As tall as its rows need, at
    least PANEL_H."""
    most = max((n for _, n, _ in rows), default=0)
    bar_w = 70
    blocks = []
    for label, count, colour in rows:
        indent = _width(f"{count:g}  ")
        lines = tiles.wrapped([label], width - 12 - bar_w - indent, SCALE) or [""]
        blocks.append((lines, count, colour, indent))
    heading = _title_lines(title, width)
    count_lines = sum(len(block[0]) for block in blocks) + (1 if more or not rows else 0)
    image = _paper(max(PANEL_H, 20 + (len(heading) + count_lines) * LINE + 6), width)
    y = _title(image, heading) + 4
    for lines, count, colour, indent in blocks:
        if count > 0:  # a bar of at least a pixel: none only for none
            length = max(1, round(bar_w * count / most))
            cv2.rectangle(image, (6, y + 3), (6 + length, y + LINE - 3), colour, -1)
        _text(image, f"{count:g}", 12 + bar_w, y + LINE - 4)
        for line in lines:
            _text(image, line, 12 + bar_w + indent, y + LINE - 4)
            y += LINE
    if more:
        _text(image, f"+{more} more (the text report lists them all)", 12 + bar_w, y + LINE - 4)
    if not rows:
        _text(image, "none", 12, y + LINE - 4)
    return image


def _categories(title: str, counter: collections.Counter) -> np.ndarray:
    common = counter.most_common(MAX_ROWS)
    more = max(0, len(counter) - MAX_ROWS)
    return _rows(title, [(str(k), n, BAR) for k, n in common], more)


def _classes(split: SplitReport, names: list[str]) -> np.ndarray:
    """Examples a class: named bars for a few classes, a histogram over class ids for many;
    from `labels`, each class's segments and seconds beside its name."""
    counts = class_counts(split, names)
    classes = len(counts.names)
    source = " (from labels)" if split.multi_label else ""
    title = f"{split.name}: {split.examples} examples, {classes} classes{source}"
    if classes > _NAMED_CLASSES:
        return _histogram(
            title + ": examples a class", counts.examples, "0", str(classes - 1), 2 * PANEL_W
        )
    rows = []
    for c, name in enumerate(counts.names):
        if counts.segments is not None:
            name += f" ({plural(int(counts.segments[c]), 'segment')}, {counts.seconds[c]:.1f} s)"
        rows.append((name, int(counts.examples[c]), BAR))
    return _rows(title + ": examples a class", rows, width=2 * PANEL_W)


def _reasons(split: SplitReport) -> np.ndarray:
    """One row per kind of reason a video was skipped (red) or noted (amber), with its count,
    as the text report's rows; past MAX_ROWS, how many more."""
    rows = []
    for records, colour in ((split.skipped, SKIPPED), (split.notes, NOTED)):
        groups = problem_groups(records)
        rows += [(problem_text(kind, group), len(group), colour) for kind, group in groups]
    rows.sort(key=lambda row: -row[1])
    title = f"skipped {len(split.skipped)} (red), noted {len(split.notes)} (amber): by reason"
    return _rows(title, rows[:MAX_ROWS], max(0, len(rows) - MAX_ROWS), 3 * PANEL_W)


def _row(panels: list[np.ndarray]) -> np.ndarray:
    """Panels side by side, padded with paper to the tallest, a black line after each."""
    height = max(p.shape[0] for p in panels)
    padded = [np.pad(p, ((0, height - p.shape[0]), (0, 0), (0, 0)), constant_values=255)
              for p in panels]  # fmt: skip
    return np.concatenate([np.pad(p, ((0, 1), (0, 1), (0, 0))) for p in padded], 1)


def _split_rows(split: SplitReport, names: list[str]) -> list[np.ndarray]:
    rates = collections.Counter(f"{r:g} fps" for r in split.fps if np.isfinite(r))
    sizes = collections.Counter({f"{h}x{w}": n for (h, w), n in split.frame_sizes.items()})
    return [
        _row([
            _classes(split, names),
            _values("duration", split.durations, " s"),
            _values("stored frames", split.num_frames.astype(np.float64), ""),
            _values("record size", split.record_bytes / 1024, " KiB"),
        ]),
        _row([
            _categories("frame rate", rates),
            _categories("frame size (h x w)", sizes),
            _reasons(split),
        ]),
    ]  # fmt: skip


def report_image(report: DatasetReport) -> np.ndarray:
    """RGB uint8: a title line, then two rows of panels per split."""
    rows = [row for split in report.splits for row in _split_rows(split, report.class_names)]
    width = max(row.shape[1] for row in rows)
    title = f"{report.name} {report.version}: {report.dataset_dir}"
    lines = tiles.wrapped([title], width - 8, SCALE)
    header = _paper(8 + LINE * len(lines), width)
    for i, line in enumerate(lines):
        _text(header, line, 6, 16 + i * LINE)
    rows = [np.pad(row, ((0, 0), (0, width - row.shape[1]), (0, 0)), constant_values=255)
            for row in rows]  # fmt: skip
    return np.concatenate([header, *rows])
