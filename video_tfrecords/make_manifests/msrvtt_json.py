"""MSR-VTT: train_val_videodatainfo.json and test_videodatainfo.json (or MSRVTT_data.json).

Each is `{"videos": [{"video_id": "video0", "category": 9, "split": "train"|"validate"|"test"}],
"sentences": [{"caption", "video_id", "sen_id"}]}`. A video is one example: `captions` (its
sentences in sen_id order, exactly as published) and `label`, its category: MSR-VTT publishes
the 20 categories as numbers only, so class k is named "k" (labels.txt: 0..19), free to use or
ignore. The video is `{video_id}.mp4` (or another extension) anywhere under --videos.

Splits are the JSON's `split` (validate -> val), or with `lists` the benchmark's split files:
"9k" (MSRVTT_train.9k.csv, MSRVTT_JSFUSION_test.csv: the 1k-A test), "7k"
(MSRVTT_train.7k.csv and the same test), or NAME ({train,val,test}_list_NAME.txt). A list is
a CSV with a `video_id` column or one id a line; a CSV with a `sentence` column gives its
videos' captions (the 1k-A test's one sentence each). A video in no list is left out and so
recorded.
"""

from __future__ import annotations

import os

from video_tfrecords.make_manifests import common, writer
from video_tfrecords.make_manifests.json_source import json_items

JSON_FILES = ("train_val_videodatainfo.json", "test_videodatainfo.json", "MSRVTT_data.json")
SPLITS = {"train": "train", "validate": "val", "test": "test"}
CSV_LISTS = {
    "9k": {"train": "MSRVTT_train.9k.csv", "test": "MSRVTT_JSFUSION_test.csv"},
    "7k": {"train": "MSRVTT_train.7k.csv", "test": "MSRVTT_JSFUSION_test.csv"},
}


def _list_files(annotations: str, lists: str) -> dict[str, str]:
    """split -> the list file of `lists` in `annotations` (those there are)."""
    names = CSV_LISTS.get(lists) or {s: f"{s}_list_{lists}.txt" for s in ("train", "val", "test")}
    found = {s: os.path.join(annotations, n) for s, n in names.items()}
    found = {s: p for s, p in found.items() if os.path.isfile(p)}
    if not found:
        raise common.AnnotationError(
            [f"{annotations}: no split list of --lists {lists} ({', '.join(names.values())})"]
        )
    return found


def _read_list(path: str, problems: list[str]) -> list[tuple[int, str, str | None]]:
    """(line, video id, sentence or None) of each row of a split list."""
    if path.endswith(".csv"):
        rows = common.read_csv(path, ("video_id",), problems)
        return [(line, row["video_id"], row.get("sentence")) for line, row in rows]
    return [(line, text.split()[0], None) for line, text in common.read_lines(path, problems)
            if text.strip()]  # fmt: skip


class _Reader:
    def __init__(self):
        self.problems: list[str] = []
        self.dropped: list[str] = []
        self.videos: dict[str, dict] = {}  # id -> {"where", "split", "category"}
        self.sentences: dict[str, list] = {}  # id -> [(sen_id, caption)]

    def json_file(self, path: str) -> None:
        for line, i, video in json_items(path, self.problems, within="videos"):
            where = f"{path}:{line}"
            video_id = video.get("video_id") if isinstance(video, dict) else None
            category = video.get("category") if isinstance(video, dict) else None
            if not isinstance(video_id, str) or not video_id or "/" in video_id:
                self.problems.append(f'{where}: videos[{i}] has no usable "video_id"')
            elif not isinstance(category, int) or isinstance(category, bool) or category < 0:
                self.problems.append(f"{where}: {video_id}: category {category!r} is not a number")
            elif video_id in self.videos:
                first = self.videos[video_id]["where"]
                self.dropped.append(f"{where}: video {video_id} again (first at {first}): dropped")
            elif not isinstance(video.get("split"), str) or video["split"] not in SPLITS:
                self.dropped.append(
                    f"{where}: video {video_id}: split {video.get('split')!r} is no split: dropped"
                )
            else:
                split = SPLITS[video["split"]]
                self.videos[video_id] = {"where": where, "split": split, "category": category}
        seen = {}
        for line, i, sentence in json_items(path, self.problems, within="sentences"):
            where = f"{path}:{line}"
            keys = ("caption", "video_id", "sen_id")
            values = [sentence.get(k) for k in keys] if isinstance(sentence, dict) else [None] * 3
            caption, video_id, sen_id = values
            if (
                not isinstance(caption, str)
                or not isinstance(video_id, str)
                or not (isinstance(sen_id, int) and not isinstance(sen_id, bool))
            ):
                self.problems.append(
                    f'{where}: sentences[{i}] needs a "caption", a "video_id" and an integer "sen_id"'
                )
            elif sen_id in seen:
                self.dropped.append(
                    f"{where}: sentence {sen_id} again (first at {seen[sen_id]}): dropped"
                )
            elif video_id not in self.videos:
                self.dropped.append(f"{where}: sentence {sen_id}: no video {video_id}: dropped")
            else:
                seen[sen_id] = where
                self.sentences.setdefault(video_id, []).append((sen_id, caption))

    def apply_lists(self, files: dict[str, str]) -> dict[str, list[str]]:
        """Moves each listed video to its list's split; returns the lists' own sentences."""
        listed, own = {}, {}
        for split, path in files.items():
            for line, video_id, sentence in _read_list(path, self.problems):
                where = f"{path}:{line}"
                if video_id not in self.videos:
                    self.dropped.append(f"{where}: video {video_id} is in no JSON file: dropped")
                elif listed.get(video_id, (split,))[0] != split:
                    first = listed[video_id][1]
                    self.dropped.append(
                        f"{where}: video {video_id} already in {listed[video_id][0]} "
                        f"(at {first}): dropped from {split}"
                    )
                else:
                    listed.setdefault(video_id, (split, where))
                    if sentence is not None:
                        own.setdefault(video_id, []).append(sentence)
        for video_id, video in self.videos.items():
            if video_id in listed:
                video["split"] = listed[video_id][0]
            else:
                self.dropped.append(f"{video['where']}: video {video_id} is in no split list")
                video["split"] = None
        return own


def read(annotations: str, lists: str | None = None) -> common.Parsed:
    """Reads the JSON files there are (or the one given), then the split lists if asked."""
    if os.path.isfile(annotations):
        paths, folder = [annotations], os.path.dirname(annotations)
    else:
        paths = [os.path.join(annotations, n) for n in JSON_FILES]
        paths, folder = [p for p in paths if os.path.isfile(p)], annotations
    if not paths:
        raise common.AnnotationError([f"{annotations}: no MSR-VTT JSON ({', '.join(JSON_FILES)})"])
    reader = _Reader()
    for path in paths:
        reader.json_file(path)
    own = reader.apply_lists(_list_files(folder, lists)) if lists else {}
    if reader.problems:  # each file is read twice (videos, sentences): a JSON error once
        raise common.AnnotationError(list(dict.fromkeys(reader.problems)))
    classes = common.ordered_classes(str(v["category"]) for v in reader.videos.values())
    ids = {name: i for i, name in enumerate(classes)}
    items = []
    for video_id, video in reader.videos.items():
        if video["split"] is None:
            continue
        sentences = [text for _, text in sorted(reader.sentences.get(video_id, []))]
        example = {"captions": own.get(video_id, sentences)}
        label = ids[str(video["category"])]
        items.append(common.Annotation(video["where"], video["split"], label, (video_id,),
                                       example=example))  # fmt: skip
    return common.Parsed(classes, items, [], dropped=reader.dropped)


def msrvtt(annotations: str, videos: str, out: str, lists: str | None = None) -> common.Result:
    """MSR-VTT JSON (and split lists) in `annotations`, videos under `videos` -> manual dir."""
    return writer.convert(read(annotations, lists), videos, out)
