"""Kinetics 400/600/700: train.csv, validate.csv and test.csv as published.

Rows are `label,youtube_id,time_start,time_end,split[,is_cc]`; labels hold spaces,
parentheses and commas (quoted). A video is `{youtube_id}_{start:06d}_{end:06d}.EXT` (the
downloaders' name) or `{youtube_id}.EXT`, anywhere under --videos. The trimmed name holds
just the clip and is written whole; `{youtube_id}.EXT` is taken for the YouTube video, so its
example keeps `start`/`end` (time_start/time_end) and its split is written as JSON Lines
(`writer`). Where ID.EXT files are clips already (some mirrors name them so), `no_spans` writes
them whole: a span of 10-20 s in a 10 s clip would be empty.
"""

from __future__ import annotations

import os

from video_tfrecords.make_manifests import common, writer

CSV_SPLITS = {"train.csv": "train", "validate.csv": "val", "test.csv": "test"}
REQUIRED = ("youtube_id", "time_start", "time_end")


def _seconds(text: str) -> int | None:
    """A whole number of seconds ("14", "14.0"), or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and value >= 0 else None


def read(annotations: str, no_spans: bool = False) -> common.Parsed:
    """Reads the CSVs there are; a split without labels (Kinetics' test) is counted, not kept."""
    present = [n for n in CSV_SPLITS if os.path.isfile(os.path.join(annotations, n))]
    if not present:
        raise common.AnnotationError(
            [f"{annotations}: no Kinetics annotations (train.csv, validate.csv, test.csv)"]
        )
    problems, notes, unlabeled, labelled = [], [], 0, []
    for name in present:
        path = os.path.join(annotations, name)
        rows = common.read_csv(path, REQUIRED, problems)
        if any(row.get("label") for _, row in rows):
            labelled.append((path, CSV_SPLITS[name], rows))
        elif rows:
            unlabeled += len(rows)
            notes.append(f"{name} has no labels: no {CSV_SPLITS[name]} split written")
    if not labelled and not problems:
        problems.append(f"{annotations}: no CSV has labels")
    classes = common.ordered_classes(
        row["label"] for _, _, rows in labelled for _, row in rows if row["label"]
    )
    ids = {name: i for i, name in enumerate(classes)}
    items = []
    for path, split, rows in labelled:
        for line, row in rows:
            where = f"{path}:{line}"
            start, end = _seconds(row["time_start"]), _seconds(row["time_end"])
            video_id = row["youtube_id"]
            if not row["label"]:
                problems.append(f"{where}: no label (other rows of this file have one)")
            elif not video_id or any(c in video_id for c in "/\\ \t"):
                problems.append(f"{where}: youtube_id {video_id!r} is not a YouTube id")
            elif start is None or end is None:
                problems.append(
                    f"{where}: time_start {row['time_start']!r} / time_end {row['time_end']!r} "
                    "are not whole seconds"
                )
            else:
                stems = (f"{video_id}_{start:06d}_{end:06d}", video_id)
                label, span = ids[row["label"]], (float(start), float(end))
                untrimmed = () if no_spans else (video_id,)
                items.append(common.Annotation(where, split, label, stems, span=span,
                                               span_stems=untrimmed))  # fmt: skip
    return common.Parsed(classes, items, problems, unlabeled, notes)


def kinetics(annotations: str, videos: str, out: str, no_spans: bool = False) -> common.Result:
    """Kinetics CSVs in `annotations`, videos under `videos` -> manual dir `out`."""
    return writer.convert(read(annotations, no_spans), videos, out)
