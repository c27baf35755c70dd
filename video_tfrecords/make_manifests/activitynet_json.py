"""ActivityNet v1.3 (activity_net.v1-3.min.json) and ActivityNet Captions (train.json, val_1.json).

v1.3: `{"database": {ID: {"subset", "duration", "annotations": [{"label", "segment": [s, e]}]}},
"taxonomy": [...]}`; subsets training, validation, testing -> train, val, test (testing has
no annotations: counted, not written). The classes are the taxonomy's leaves (the 200 activities,
sorted), or without a taxonomy the labels used. Captions: `{"v_ID": {"duration", "timestamps":
[[s, e], ...], "sentences": [...]}}`, train.json -> train, val_1.json -> val (val_2.json, val_1's
videos annotated again, only when passed as the one file). The video is `v_ID.EXT` (the
crawler's name) or `ID.EXT` anywhere under --videos.

By default a video is one example: `labels`, `segments` (v1.3) and `captions` ({text, start,
end}; ActivityNet Captions), merged by ID; spans are cut to the stated duration (`spans`).
With `segments=True` each segment is one example: {label, start, end} from v1.3, or
{captions: [text], start, end} from the captions files; reading both that way is refused.
"""

from __future__ import annotations

import os

from video_tfrecords.make_manifests import common, writer
from video_tfrecords.make_manifests.json_source import json_items
from video_tfrecords.make_manifests.spans import Spans, seconds

V13_FILE = "activity_net.v1-3.min.json"
SUBSETS = {"training": "train", "validation": "val", "testing": "test"}
CAPTION_FILES = {"train.json": "train", "val_1.json": "val"}
CAPTION_SPLITS = {**CAPTION_FILES, "val_2.json": "val"}  # val_2.json only when passed itself


def _files(annotations: str) -> tuple[str | None, list[str], list[str]]:
    """(the v1.3 file or None, the captions files, notes) of a folder or one file."""
    if os.path.isfile(annotations):
        name = os.path.basename(annotations)
        if name in CAPTION_SPLITS:
            return None, [annotations], []
        return annotations, [], []
    v13 = os.path.join(annotations, V13_FILE)
    v13 = v13 if os.path.isfile(v13) else None
    captions = [os.path.join(annotations, n) for n in CAPTION_FILES]
    notes = []
    if os.path.isfile(os.path.join(annotations, "val_2.json")):
        notes.append("val_2.json (val_1.json's videos annotated again) not read: pass it alone")
    return v13, [p for p in captions if os.path.isfile(p)], notes


def _node(node) -> tuple | None:
    """(nodeId, parentId, nodeName) of a taxonomy node, or None if it lacks them."""
    if not isinstance(node, dict):
        return None
    node_id, parent, name = node.get("nodeId"), node.get("parentId"), node.get("nodeName")
    ids = isinstance(node_id, (int, str)) and (parent is None or isinstance(parent, (int, str)))
    return (node_id, parent, name) if ids and isinstance(name, str) else None


def _leaves(path: str, problems: list[str]) -> list[str]:
    """The taxonomy's leaf nodeNames: the activities (every other node is a parent)."""
    nodes = []
    for line, key, value in json_items(path, problems):
        for i, node in enumerate(value if key == "taxonomy" and isinstance(value, list) else []):
            if (fields := _node(node)) is None:
                problems.append(f'{path}:{line}: taxonomy[{i}] lacks "nodeId" or "nodeName"')
            else:
                nodes.append(fields)
    parents = {parent for _, parent, _ in nodes}
    return [name for node_id, _, name in nodes if node_id not in parents]


class _Reader:
    """Collects the videos of the files read, keyed by ID, then makes the examples."""

    def __init__(self):
        self.problems: list[str] = []
        self.spans = Spans()
        self.videos: dict[str, dict] = {}  # ID -> {"where", "split", "segments", "captions"}
        self.unlabeled = 0

    def _video(self, where: str, video_id: str, split: str, source: str) -> dict | None:
        """The video's record, made on first sight; None if `source` already had it."""
        video = self.videos.setdefault(video_id, {"where": where, "split": split, "from": set()})
        if source in video["from"]:
            self.spans.dropped.append(
                f"{where}: video {video_id} again (first at {video['where']}): dropped"
            )
            return None
        video["from"].add(source)
        return video

    def v13(self, path: str, classes: set[str] | None) -> None:
        for line, video_id, entry in json_items(path, self.problems, within="database"):
            where, what = f"{path}:{line}", f"video {video_id}"
            if not isinstance(entry, dict) or not isinstance(video_id, str) or "/" in video_id:
                self.problems.append(f"{where}: {what}: not an object with a usable id")
                continue
            subset, annotations = entry.get("subset"), entry.get("annotations") or []
            split = SUBSETS.get(subset) if isinstance(subset, str) else None
            if not isinstance(annotations, list):
                self.problems.append(f'{where}: {what}: "annotations" is not a list')
                continue
            if split is None:
                self.spans.dropped.append(
                    f"{where}: {what}: subset {subset!r} is no split: dropped"
                )
                continue
            if split == "test" and not annotations:
                self.unlabeled += 1
                continue
            actions = []
            for i, item in enumerate(annotations):
                segment = item.get("segment") if isinstance(item, dict) else None
                label = item.get("label") if isinstance(item, dict) else None
                ends = [seconds(s) for s in segment] if isinstance(segment, list) else []
                if not isinstance(label, str) or len(ends) != 2 or None in ends:
                    self.problems.append(f"{where}: {what}: annotation {i} has no label and "
                                         "[start, end] seconds")  # fmt: skip
                elif classes is not None and label not in classes:
                    self.problems.append(f"{where}: {what}: label {label!r} is not in the taxonomy")
                else:
                    actions.append((label, *ends))
            video = self._video(where, video_id, split, path)
            if video is not None:
                duration = seconds(entry.get("duration"))
                video["segments"] = self.spans.segments(actions, duration, where, what)

    def captions(self, path: str, split: str) -> None:
        for line, key, entry in json_items(path, self.problems):
            where, what = f"{path}:{line}", f"video {key}"
            timestamps = entry.get("timestamps") if isinstance(entry, dict) else None
            sentences = entry.get("sentences") if isinstance(entry, dict) else None
            if (
                not isinstance(key, str)
                or not isinstance(timestamps, list)
                or not isinstance(sentences, list)
                or len(timestamps) != len(sentences)
                or not all(isinstance(s, str) for s in sentences)
            ):
                self.problems.append(
                    f"{where}: {what}: needs an id ('v_ID') and as many timestamps as sentences"
                )
                continue
            video_id = key.removeprefix("v_")
            duration = seconds(entry.get("duration"))
            captions = []
            for i, (stamp, text) in enumerate(zip(timestamps, sentences, strict=True)):
                ends = [seconds(s) for s in stamp] if isinstance(stamp, list) else []
                if len(ends) != 2 or None in ends:
                    self.problems.append(f"{where}: {what}: timestamp {i} is not [start, end]")
                    continue
                span = self.spans.clean(*ends, duration, where, f"{what} sentence {i}")
                if span is not None:
                    captions.append({"text": text, "start": span[0], "end": span[1]})
            video = self._video(where, video_id, split, path)
            if video is not None:
                video["captions"] = captions

    def examples(self, classes: list[str], per_segment: bool) -> list[common.Annotation]:
        items = []
        for video_id, video in self.videos.items():
            where, split = video["where"], video["split"]
            stems = (f"v_{video_id}", video_id)
            if not per_segment:
                example = {}
                if "segments" in video:
                    labels = {s["label"] for s in video["segments"]}
                    example["labels"] = [name for name in classes if name in labels]
                    example["segments"] = video["segments"]
                if "captions" in video:
                    example["captions"] = video["captions"]
                items.append(common.Annotation(where, split, None, stems, example=example))
                continue
            segments = list(video.get("segments", []))
            for caption in video.get("captions", []):
                start, end = caption["start"], caption["end"]
                segments.append({"captions": [caption["text"]], "start": start, "end": end})
            if not segments:
                self.spans.dropped.append(f"{where}: video {video_id}: no segment: no example")
            for segment in segments:
                items.append(common.Annotation(where, split, None, stems, example=segment))
        return items


def read(annotations: str, segments: bool = False) -> common.Parsed:
    """Reads the v1.3 file and the captions files found (or the one file given)."""
    v13, caption_files, notes = _files(annotations)
    if v13 is None and not caption_files:
        raise common.AnnotationError(
            [f"{annotations}: no {V13_FILE}, train.json or val_1.json (ActivityNet annotations)"]
        )
    if segments and v13 and caption_files:
        why = "segments of actions and of captions would share the splits"
        raise common.AnnotationError(
            [f"{annotations}: {why}: pass --annotations {V13_FILE} or a captions file"]
        )
    reader = _Reader()
    classes = None
    if v13 is not None:
        classes = _leaves(v13, reader.problems)
        reader.v13(v13, set(classes) if classes else None)
    for path in caption_files:
        reader.captions(path, CAPTION_SPLITS[os.path.basename(path)])
    if reader.problems:  # the file is read twice (taxonomy, database): a JSON error once
        raise common.AnnotationError(list(dict.fromkeys(reader.problems)))
    if v13 is not None and not classes:
        used = {s["label"] for v in reader.videos.values() for s in v.get("segments", [])}
        classes = common.ordered_classes(used)
        notes.append(f"{v13} has no taxonomy: the classes are the {len(classes)} labels used")
    classes = common.ordered_classes(classes or [])
    items = reader.examples(classes, segments)
    if reader.unlabeled:
        notes.append(f"{reader.unlabeled:,} testing videos have no annotations: no test split")
    return common.Parsed(
        classes,
        items,
        [],
        reader.unlabeled,
        notes,
        dropped=reader.spans.dropped,
        clipped=reader.spans.clipped,
    )


def activitynet(annotations: str, videos: str, out: str, segments: bool = False) -> common.Result:
    """ActivityNet v1.3 and/or Captions annotations, videos under `videos` -> manual dir `out`."""
    return writer.convert(read(annotations, segments), videos, out)
