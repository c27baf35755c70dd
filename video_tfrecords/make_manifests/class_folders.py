"""Videos sorted into class folders: ROOT/CLASS/*.ext, or ROOT/{train,val,test}/CLASS/*.ext.

Without split folders, `val` and `test` fractions split every class in the same proportions;
each class is shuffled by its own seeded RNG over its sorted files, so a seed gives the same
split on every machine, and adding a class does not move the others' videos. A video is a
file the build reads (`common.not_a_video`: the video containers, GIF and APNG); every other
file is listed with its reason in dropped.txt, so nothing under --videos is left out silently.
"""

from __future__ import annotations

import math
import os
import random

from video_tfrecords.make_manifests import common, writer

SPLIT_FOLDERS = ("train", "val", "test")


def _listing(folder: str, ignored: list[str], out: str | None = None) -> tuple[list[str], int]:
    """The visible subfolders of `folder` but `out`, sorted, and how many videos lie directly in it
    (its other files go to `ignored`).

    `out` may sit in the videos' folder; on a rerun it must not be taken for a class or split.
    """
    folders, videos = [], 0
    out = os.path.realpath(out) if out else None
    with os.scandir(folder) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                if os.path.realpath(entry.path) != out:
                    folders.append(entry.name)
            elif entry.is_file():
                if reason := common.not_a_video(entry.path):
                    ignored.append(f"{entry.path}: not taken: {reason}")
                else:
                    videos += 1
    return sorted(folders), videos


def stratified(paths: list[str], class_name: str, val: float, test: float, seed: int):
    """{split: sorted paths} of one class: round(test * n) test, round(val * n) val, rest train."""
    shuffled = sorted(paths)
    random.Random(f"{seed}/{class_name}").shuffle(shuffled)
    n_test = math.floor(test * len(shuffled) + 0.5)
    n_val = min(math.floor(val * len(shuffled) + 0.5), len(shuffled) - n_test)
    return {
        "train": sorted(shuffled[n_test + n_val :]),
        "val": sorted(shuffled[n_test : n_test + n_val]),
        "test": sorted(shuffled[:n_test]),
    }


def read(
    videos: str, val: float = 0.0, test: float = 0.0, seed: int = 0, out: str | None = None
) -> common.Parsed:
    """Finds the class folders (and split folders); classes are sorted folder names."""
    if not os.path.isdir(videos):
        raise common.AnnotationError([f"{videos}: --videos is not a folder"])
    if not (0 <= val < 1 and 0 <= test < 1 and val + test < 1):
        raise common.AnnotationError([f"--val {val} --test {test}: each >= 0, together < 1"])
    problems, notes, ignored = [], [], []
    top, unlabeled = _listing(videos, ignored, out)
    layout = {"train": videos}
    if splits := [name for name in SPLIT_FOLDERS if name in top]:
        layout = {split: os.path.join(videos, split) for split in splits}
        if others := [name for name in top if name not in SPLIT_FOLDERS]:
            problems.append(
                f"{videos}: split folders ({', '.join(splits)}) next to other folders "
                f"({', '.join(others[:5])}): use one layout"
            )
        if val or test:
            problems.append(f"{videos}: --val/--test split class folders, but there are splits")
    found = {}  # split -> {class: sorted video paths}
    for split, root in layout.items():
        class_folders, loose = _listing(root, ignored, out) if splits else (top, 0)
        unlabeled += loose
        for name in class_folders:
            folder = os.path.join(root, name)
            paths = sorted(e.path for e in common.walk_videos(folder, notes, ignored))
            if paths:
                found.setdefault(split, {})[name] = paths
            else:
                notes.append(f"{os.path.join(root, name)}: no videos (not a class)")
    if unlabeled:
        notes.append(f"{unlabeled:,} videos outside any class folder (not written)")
    classes = common.ordered_classes(name for by_class in found.values() for name in by_class)
    if not classes:
        problems.append(f"{videos}: no class folder holds a video")
    ids = {name: i for i, name in enumerate(classes)}
    if not splits and (val or test):
        by_class = {c: stratified(p, c, val, test, seed) for c, p in found.get("train", {}).items()}
        found = {s: {c: parts[s] for c, parts in by_class.items()} for s in SPLIT_FOLDERS}
    items = [
        common.Annotation(path, split, ids[name], file=path)
        for split, by_class in found.items()
        for name, paths in by_class.items()
        for path in paths
    ]
    if ignored:
        notes.append(f"{len(ignored):,} files not taken for videos (listed in dropped.txt)")
    return common.Parsed(classes, items, problems, unlabeled, notes, dropped=sorted(ignored))


def folders(
    videos: str, out: str, val: float = 0.0, test: float = 0.0, seed: int = 0
) -> common.Result:
    """Class folders under `videos` (optionally split by seed) -> manual dir `out`."""
    return writer.convert(read(videos, val, test, seed, out), videos, out)
