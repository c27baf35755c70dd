"""Something-Something v2: labels.json, train.json, validation.json and test.json, as published.

A video's class is its template without brackets (`Putting [something] on a surface` ->
`Putting something on a surface`), numbered by labels.json (whose keys are matched without
brackets too); the video is `{id}.webm` anywhere under --videos. test.json has no labels.
"""

from __future__ import annotations

import os

from video_tfrecords.make_manifests import common, writer
from video_tfrecords.make_manifests.json_source import json_items

JSON_SPLITS = {"train.json": "train", "validation.json": "val", "test.json": "test"}


def _class_name(template: str) -> str:
    return template.replace("[", "").replace("]", "")


def _classes(path: str, problems: list[str]) -> list[str]:
    """Class names by id from labels.json ({template: "id"})."""
    by_id, where = {}, {}
    for line, template, value in json_items(path, problems):
        name, text = _class_name(template), str(value)
        if not common.is_id(text):
            problems.append(f"{path}:{line}: id {value!r} of {template!r} is not an integer")
        elif text in where:
            problems.append(f"{path}:{line}: id {text} already given on line {where[text]}")
        else:
            by_id[int(text)], where[text] = name, line
    gaps = sorted(set(range(len(by_id))) - set(by_id))
    if gaps:
        problems.append(f"{path}: ids {gaps[:10]} are missing (they must run 0..N-1)")
    return [by_id.get(i, "") for i in range(len(by_id))]


def read(annotations: str) -> common.Parsed:
    """Reads labels.json and the lists there are; test.json's videos are counted, not kept."""
    labels = os.path.join(annotations, "labels.json")
    present = [n for n in JSON_SPLITS if os.path.isfile(os.path.join(annotations, n))]
    if not os.path.isfile(labels) or not present:
        raise common.AnnotationError(
            [
                f"{annotations}: no SSv2 annotations (labels.json, and train.json, "
                + "validation.json or test.json)"
            ]
        )
    problems, notes, unlabeled, items = [], [], 0, []
    classes = _classes(labels, problems)
    if problems or not classes:
        raise common.AnnotationError(problems or [f"{labels}: no classes"])
    ids = {name: i for i, name in enumerate(classes)}
    for name in present:
        path, split = os.path.join(annotations, name), JSON_SPLITS[name]
        entries = json_items(path, problems)
        if entries and not any(isinstance(v, dict) and "template" in v for _, _, v in entries):
            unlabeled += len(entries)
            notes.append(f"{name} has no labels: no {split} split written")
            continue
        for line, index, entry in entries:
            where = f"{path}:{line}"
            video_id = str(entry.get("id", "")) if isinstance(entry, dict) else ""
            template = entry.get("template") if isinstance(entry, dict) else None
            if not video_id or any(c in video_id for c in "/\\") or video_id != video_id.strip():
                problems.append(f'{where}: entry {index} has no usable "id"')
            elif not isinstance(template, str):
                problems.append(f'{where}: entry {index} (id {video_id}) has no "template"')
            elif _class_name(template) not in ids:
                problems.append(
                    f"{where}: id {video_id}: template {template!r} is not in labels.json"
                )
            else:
                label = ids[_class_name(template)]
                items.append(common.Annotation(where, split, label, (video_id,), ext="webm"))
    return common.Parsed(classes, items, problems, unlabeled, notes)


def ssv2(annotations: str, videos: str, out: str) -> common.Result:
    """SSv2 JSON files in `annotations`, videos under `videos` -> manual dir `out`."""
    return writer.convert(read(annotations), videos, out)
