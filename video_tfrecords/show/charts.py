"""The report as a picture (OpenCV; no plotting library): a row of bar charts per split.

Panels: classes, durations, stored frames, frame rates, frame sizes, record
sizes, and skipped / noted videos by reason. Continuous values are binned
(`BINS`); categories (rates, sizes, reasons) get a bar each, the most common first.
"""

from __future__ import annotations

import collections

import cv2
import numpy as np

from video_tfrecords.show.report import DatasetReport, SplitReport, reason_kind

__all__ = ["BINS", "report_image"]

BINS = 20
PANEL_H, PANEL_W = 200, 300
_FONT, _SCALE = cv2.FONT_HERSHEY_SIMPLEX, 0.38
_INK, _BAR, _PAPER = (30, 30, 30), (70, 110, 200), (255, 255, 255)
_MAX_BARS = 8  # categories shown a panel


def _text(image, text: str, x: int, y: int, colour=_INK) -> None:
    """`text` at (x, y), cut to what fits in the image's width."""
    text = text.encode("ascii", "replace").decode()
    while len(text) > 1 and cv2.getTextSize(text, _FONT, _SCALE, 1)[0][0] > image.shape[1] - x:
        text = text[:-1]
    cv2.putText(image, text, (x, y), _FONT, _SCALE, colour, 1, cv2.LINE_AA)


def _panel(title: str, counts, left: str = "", right: str = "", labels=None) -> np.ndarray:
    """Vertical bars of `counts` under `title`; `left`/`right` under the ends of the axis, or a
    label under each bar."""
    image = np.full((PANEL_H, PANEL_W, 3), _PAPER, np.uint8)
    _text(image, title, 6, 14)
    counts = np.asarray(counts, np.float64)
    top, bottom, x0, x1 = 34, PANEL_H - 34, 8, PANEL_W - 8
    cv2.line(image, (x0, bottom), (x1, bottom), _INK, 1)
    if not len(counts) or counts.max() <= 0:
        _text(image, "none", x0 + 4, (top + bottom) // 2)
        return image
    _text(image, f"max {counts.max():g}", x1 - 70, 28)
    step = (x1 - x0) / len(counts)
    for i, count in enumerate(counts):
        height = round((bottom - top) * count / counts.max())
        a, b = round(x0 + i * step + (1 if step > 3 else 0)), round(x0 + (i + 1) * step) - 1
        cv2.rectangle(image, (a, bottom - height), (max(a, b), bottom), _BAR, -1)
        if labels is not None:
            _text(image, str(labels[i])[: max(1, int(step / 7))], a, bottom + 14 + 12 * (i % 2))
    _text(image, left, x0, bottom + 14)
    (width, _), _ = cv2.getTextSize(right, _FONT, _SCALE, 1)
    _text(image, right, x1 - width, bottom + 14)
    return image


def _histogram(title: str, values: np.ndarray, unit: str) -> np.ndarray:
    values = values[np.isfinite(values)]
    if not len(values):
        return _panel(title, [])
    counts, edges = np.histogram(values, bins=BINS)
    return _panel(title, counts, f"{edges[0]:.3g}{unit}", f"{edges[-1]:.3g}{unit}")


def _categories(title: str, counter: collections.Counter) -> np.ndarray:
    common = counter.most_common(_MAX_BARS)
    more = f" (+{len(counter) - _MAX_BARS} more)" if len(counter) > _MAX_BARS else ""
    return _panel(title + more, [n for _, n in common], labels=[k for k, _ in common])


def _reasons(split: SplitReport) -> np.ndarray:
    """Horizontal bars: each reason a video was skipped (red) or noted (amber), with its count."""
    image = np.full((PANEL_H, PANEL_W, 3), _PAPER, np.uint8)
    _text(image, f"skipped {len(split.skipped)}, noted {len(split.notes)}", 6, 14)
    rows = []
    for records, colour in ((split.skipped, (210, 60, 60)), (split.notes, (230, 160, 40))):
        reasons = collections.Counter(k for r in records for k in reason_kind(r.get("reason", "")))
        rows += [(reason, n, colour) for reason, n in reasons.most_common()]
    most = max((n for _, n, _ in rows), default=1)
    for i, (reason, n, colour) in enumerate(rows[:_MAX_BARS]):
        y = 28 + 20 * i
        cv2.rectangle(image, (6, y), (6 + round(80 * n / most), y + 14), colour, -1)
        _text(image, f"{n} {reason}", 92, y + 11)
    if not rows:
        _text(image, "none", 10, PANEL_H // 2)
    return image


def _split_row(split: SplitReport, names: list[str]) -> list[np.ndarray]:
    classes = max(len(names), int(split.labels.max()) + 1 if len(split.labels) else 0)
    counts = np.bincount(split.labels[split.labels >= 0], minlength=classes)
    rates = collections.Counter(f"{r:g}" for r in split.fps if np.isfinite(r))
    sizes = collections.Counter({f"{h}x{w}": n for (h, w), n in split.frame_sizes.items()})
    labels = names if 0 < classes <= 12 else None
    ends = ("", "") if labels else ("0", str(classes - 1))
    title = f"{split.name}: {split.examples} examples, {classes} classes"
    return [
        _panel(title, counts, *ends, labels=labels),
        _histogram("duration", split.durations, " s"),
        _histogram("stored frames", split.num_frames.astype(np.float64), ""),
        _categories("frame rate (fps)", rates),
        _categories("frame size (h x w)", sizes),
        _histogram("record size", split.record_bytes / 1024, " KiB"),
        _reasons(split),
    ]


def report_image(report: DatasetReport) -> np.ndarray:
    """RGB uint8: a title line, then one row of panels per split, 1 px apart."""
    rows = []
    for split in report.splits:
        panels = _split_row(split, report.class_names)
        rows.append(np.concatenate([np.pad(p, ((0, 1), (0, 1), (0, 0))) for p in panels], 1))
    width = max(row.shape[1] for row in rows)
    header = np.full((24, width, 3), _PAPER, np.uint8)
    _text(header, f"{report.name} {report.version}: {report.dataset_dir}", 6, 16)
    return np.concatenate([header, *rows])
