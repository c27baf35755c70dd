"""UCF101: classInd.txt, trainlist0N.txt and testlist0N.txt of ucfTrainTestlist, as published.

`classInd.txt` numbers the classes from 1 (id = number - 1); a train line is
`Class/v_Class_gXX_cYY.avi N`, a test line the path alone (the class is its folder); CRLF
line ends. The lists and the files disagree on case (`HandstandPushups/v_HandStandPushups_...`),
so a video absent at its annotated path is looked up by file name, ignoring case.
"""

from __future__ import annotations

import os
import re

from video_tfrecords.make_manifests import common, writer


def _classes(path: str, problems: list[str]) -> list[str]:
    """Class names by id (classInd number - 1)."""
    by_number, first_line = {}, {}
    for line, text in common.read_lines(path, problems):
        fields = text.split()
        if not fields:
            continue
        if len(fields) != 2 or not common.is_id(fields[0]) or fields[0] == "0":
            problems.append(f"{path}:{line}: expected '{{number from 1}} {{class}}', got {text!r}")
        elif fields[0] in first_line:
            problems.append(
                f"{path}:{line}: number {fields[0]} already on line {first_line[fields[0]]}"
            )
        else:
            by_number[int(fields[0])] = fields[1]
            first_line[fields[0]] = line
    gaps = sorted(set(range(1, len(by_number) + 1)) - set(by_number))
    if gaps:
        problems.append(f"{path}: class numbers {gaps} are missing (they must run 1..N)")
        return []
    return [by_number[n] for n in range(1, len(by_number) + 1)]


def read(annotations: str, fold: int = 1) -> common.Parsed:
    """Reads classInd.txt and fold `fold`'s lists (UCF101 has no validation split)."""
    lists = {"train": f"trainlist{fold:02d}.txt", "test": f"testlist{fold:02d}.txt"}
    wanted = ["classInd.txt", *lists.values()]
    absent = [n for n in wanted if not os.path.isfile(os.path.join(annotations, n))]
    if absent:
        names = os.listdir(annotations) if os.path.isdir(annotations) else []
        folds = sorted({int(m[1]) for n in names if (m := re.fullmatch(r"trainlist(\d+)\.txt", n))})
        raise common.AnnotationError(
            [f"{annotations}: no {', '.join(absent)} (fold {fold}; folds there: {folds or 'none'})"]
        )
    problems = []
    classes = _classes(os.path.join(annotations, "classInd.txt"), problems)
    if problems or not classes:
        raise common.AnnotationError(problems or [f"{annotations}/classInd.txt: no classes"])
    by_lower = {name.lower(): i for i, name in enumerate(classes)}
    items = []
    for split, name in lists.items():
        path = os.path.join(annotations, name)
        for line, text in common.read_lines(path, problems):
            fields = text.split()
            if not fields:
                continue
            where = f"{path}:{line}"
            video = fields[0].replace("\\", "/")
            folder, _, file_name = video.rpartition("/")
            folder = folder.rpartition("/")[2]
            if len(fields) > 2 or (split == "train" and len(fields) != 2):
                expected = "Class/video.avi" + (" {class number}" if split == "train" else "")
                problems.append(f"{where}: expected '{expected}', got {text.strip()!r}")
                continue
            if len(fields) == 2:
                if not common.is_id(fields[1]) or not 1 <= int(fields[1]) <= len(classes):
                    problems.append(f"{where}: class number {fields[1]!r} is not in classInd.txt")
                    continue
                label = int(fields[1]) - 1
                if folder and folder.lower() != classes[label].lower():
                    problems.append(
                        f"{where}: the folder {folder!r} is not class {fields[1]} "
                        f"({classes[label]!r})"
                    )
                    continue
            elif folder.lower() in by_lower:
                label = by_lower[folder.lower()]
            else:
                problems.append(f"{where}: the folder {folder!r} is not a class of classInd.txt")
                continue
            stem, ext = common.stem_and_extension(file_name)
            items.append(common.Annotation(where, split, label, (stem,), video, ext, True))
    return common.Parsed(classes, items, problems)


def ucf101(annotations: str, videos: str, out: str, fold: int = 1) -> common.Result:
    """UCF101 lists in `annotations` (fold 1-3), videos under `videos` -> manual dir `out`."""
    return writer.convert(read(annotations, fold), videos, out)
