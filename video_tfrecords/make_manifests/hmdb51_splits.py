"""HMDB51: the CLASS_test_splitN.txt files of testTrainMulti_7030_splits, as published.

Fold N has one file per class (the class is the name before `_test_split`); each line is
`video.avi FLAG ` with a trailing space, FLAG 1 = train, 2 = test, 0 = not used in this fold.
Videos sit in class folders or flat under --videos.
"""

from __future__ import annotations

import os
import re

from video_tfrecords.make_manifests import common, writer

SPLIT_FILE = re.compile(r"(.+)_test_split(\d+)\.txt")
FLAGS = {"1": "train", "2": "test"}


def read(annotations: str, fold: int = 1) -> common.Parsed:
    """Reads fold `fold` of every class; classes are sorted names."""
    names = sorted(os.listdir(annotations)) if os.path.isdir(annotations) else []
    files = {}  # (class, fold) -> file name
    for name in names:
        if match := SPLIT_FILE.fullmatch(name):
            files[(match[1], int(match[2]))] = name
    folds = sorted({f for _, f in files})
    if fold not in folds:
        raise common.AnnotationError(
            [f"{annotations}: no *_test_split{fold}.txt files (folds there: {folds or 'none'})"]
        )
    classes = common.ordered_classes(c for c, _ in files)
    problems = [
        f"{annotations}: class {c!r} has no {c}_test_split{fold}.txt (it has other folds)"
        for c in classes
        if (c, fold) not in files
    ]
    items, unused = [], 0
    for label, class_name in enumerate(classes):
        if (class_name, fold) not in files:
            continue
        path = os.path.join(annotations, files[(class_name, fold)])
        for line, text in common.read_lines(path, problems):
            fields = text.strip().rsplit(maxsplit=1)  # a name may hold spaces; FLAG is last
            if not fields:
                continue
            where = f"{path}:{line}"
            if len(fields) != 2 or fields[1] not in ("0", "1", "2"):
                problems.append(f"{where}: expected '{{video.avi}} {{0, 1 or 2}}', got {text!r}")
            elif fields[1] == "0":
                unused += 1
            else:
                stem, ext = common.stem_and_extension(fields[0])
                video = f"{class_name}/{fields[0]}"
                items.append(common.Annotation(where, FLAGS[fields[1]], label, (stem,), video, ext))
    notes = [f"{unused:,} videos flagged 0 (not used in fold {fold})"] if unused else []
    return common.Parsed(classes, items, problems, notes=notes)


def hmdb51(annotations: str, videos: str, out: str, fold: int = 1) -> common.Result:
    """HMDB51 split files in `annotations` (fold 1-3), videos under `videos` -> manual dir `out`."""
    return writer.convert(read(annotations, fold), videos, out)
