"""Charades: Charades_v1_train.csv, Charades_v1_test.csv and Charades_v1_classes.txt, as published.

Splits: _train is train; _test is val, because Charades' "test" CSV is the set every paper
reports its mAP on as the validation set (the real test labels were never published), so it
is TFDS's `validation`. A class is its text in Charades_v1_classes.txt (`c000 Holding some
clothes` -> "Holding some clothes") with id NNN of cNNN, so labels.txt line i is class c{i:03d}.

Each video is one example: `labels` (its classes, each once, by id), `segments` (each action of
`actions`, `cNNN start end;...`, as {label, start, end}, cut to the row's `length` by `spans`),
`captions` (`descriptions` split at ';', Charades' list separator). A video without actions is
written with `labels` and `segments` empty: it shows none of the classes. The video is
`{id}.mp4` (or another extension) anywhere under --videos.
"""

from __future__ import annotations

import os
import re

from video_tfrecords.make_manifests import common, writer
from video_tfrecords.make_manifests.spans import Spans, seconds

CSV_SPLITS = {"Charades_v1_train.csv": "train", "Charades_v1_test.csv": "val"}
CLASSES_FILE = "Charades_v1_classes.txt"
REQUIRED = ("id", "actions")
_CLASS = re.compile(r"c(\d+)")


def _classes(path: str, problems: list[str]) -> dict[str, str]:
    """{"c000": "Holding some clothes", ...} in id order; the codes must run c000..cN-1."""
    by_number, first_line = {}, {}
    for line, text in common.read_lines(path, problems):
        if not text.strip():
            continue
        code, _, name = text.strip().partition(" ")
        match = _CLASS.fullmatch(code)
        if not match or not name.strip():
            problems.append(f"{path}:{line}: expected 'cNNN class text', got {text!r}")
        elif int(match[1]) in first_line:
            problems.append(f"{path}:{line}: {code} already on line {first_line[int(match[1])]}")
        else:
            by_number[int(match[1])], first_line[int(match[1])] = (code, name.strip()), line
    gaps = sorted(set(range(len(by_number))) - set(by_number))
    if gaps:
        problems.append(f"{path}: class numbers {gaps[:10]} are missing (they must run 0..N-1)")
    return dict(by_number[n] for n in sorted(by_number))


def _actions(text: str, names: dict[str, str], where: str, problems: list[str]) -> list | None:
    """[(class name, start, end)] of an `actions` field; None (with the problem) if malformed."""
    actions = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        fields = item.split()
        start, end = (seconds(f) for f in fields[1:3]) if len(fields) == 3 else (None, None)
        if len(fields) != 3 or start is None or end is None:
            problems.append(f"{where}: action {item!r} is not 'cNNN start end'")
            return None
        if fields[0] not in names:
            problems.append(f"{where}: action {item!r}: {fields[0]} is not in {CLASSES_FILE}")
            return None
        actions.append((names[fields[0]], start, end))
    return actions


def read(annotations: str) -> common.Parsed:
    """Reads the class list and the CSVs there are; a repeated id keeps its first row."""
    present = [n for n in CSV_SPLITS if os.path.isfile(os.path.join(annotations, n))]
    classes_path = os.path.join(annotations, CLASSES_FILE)
    if not present or not os.path.isfile(classes_path):
        raise common.AnnotationError(
            [f"{annotations}: no Charades annotations ({CLASSES_FILE} and {', '.join(CSV_SPLITS)})"]
        )
    problems, notes, items, first = [], [], [], {}
    names = _classes(classes_path, problems)
    if problems or not names:
        raise common.AnnotationError(problems or [f"{classes_path}: no classes"])
    classes = list(names.values())
    ids = {name: i for i, name in enumerate(classes)}
    spans, without_actions = Spans(), 0
    for file_name in present:
        path, split = os.path.join(annotations, file_name), CSV_SPLITS[file_name]
        for line, row in common.read_csv(path, REQUIRED, problems):
            where, video_id = f"{path}:{line}", row["id"]
            if not video_id or any(c in video_id for c in "/\\ \t"):
                problems.append(f"{where}: id {video_id!r} is not a Charades id")
                continue
            if video_id in first:
                spans.dropped.append(
                    f"{where}: video {video_id} again (first at {first[video_id]}): dropped"
                )
                continue
            first[video_id] = where
            length = seconds(row["length"]) if row.get("length") else None
            if row.get("length") and length is None:
                problems.append(f"{where}: length {row['length']!r} is not a number of seconds")
                continue
            actions = _actions(row["actions"], names, where, problems)
            if actions is None:
                continue
            segments = spans.segments(actions, length, where, f"video {video_id}")
            labels = sorted({s["label"] for s in segments}, key=ids.get)
            without_actions += not actions
            captions = [c.strip() for c in row.get("descriptions", "").split(";") if c.strip()]
            example = {"labels": labels, "segments": segments, "captions": captions}
            items.append(common.Annotation(where, split, None, (video_id,), example=example))
    if without_actions:
        notes.append(f"{without_actions:,} videos without actions (written with labels [])")
    return common.Parsed(
        classes, items, problems, notes=notes, dropped=spans.dropped, clipped=spans.clipped
    )


def charades(annotations: str, videos: str, out: str) -> common.Result:
    """Charades CSVs and class list in `annotations`, videos under `videos` -> manual dir `out`."""
    return writer.convert(read(annotations), videos, out)
