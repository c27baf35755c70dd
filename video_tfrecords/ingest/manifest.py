"""Reads and validates the `{video path} {label}` manifests of a manual dir.

Every problem in every manifest is collected and reported in one
`ManifestError`, each as `FILE:LINE: reason`, before any video is decoded: a
typo on line 90,000 should cost seconds, not the hours of decoding before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etils import epath
# Otherwise imported where a path is made: a build worker unpickles `Entry`
# and so imports this module, and etils.epath would add 50 ms to its start.

# Split name -> manifest file names accepted for it, in order of preference.
MANIFEST_FILES: Mapping[str, tuple[str, ...]] = {
    "train": ("train.txt",),
    "validation": ("val.txt", "validation.txt"),
    "test": ("test.txt",),
}
LABELS_FILE = "labels.txt"
# File extensions of the video containers corpora hold (lower case, without the dot), in the
# order make_manifests prefers when one video is there in several.
VIDEO_EXTENSIONS = (
    "mp4", "webm", "mkv", "m4v", "mov", "avi", "flv", "mpg", "mpeg", "wmv", "3gp", "ogv",
    "ts", "mts", "m2ts", "vob", "asf", "dv", "mxf",
)  # fmt: skip


class ManifestError(ValueError):
    """One or more manifest lines are wrong; `problems` lists `FILE:LINE: reason`."""

    WHAT = "in the manifests"  # what the problems are of, for the message

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__(
            f"{len(self.problems)} problem(s) {self.WHAT}:\n  " + "\n  ".join(self.problems)
        )


@dataclasses.dataclass(frozen=True)
class Entry:
    """One manifest line: a video and its label, with where it was written."""

    manifest: str  # the manifest file's path, for messages
    line: int  # 1-based line number in `manifest`
    path: str  # the video path exactly as written in the manifest
    label: str  # the label exactly as written (a class name or an integer id)

    @property
    def where(self) -> str:
        return f"{self.manifest}:{self.line}"


@dataclasses.dataclass(frozen=True)
class Dataset:
    """The validated content of a manual dir."""

    splits: dict[str, list[Entry]]  # split name -> entries, in manifest order
    class_names: list[str]  # label id i is class_names[i]
    label_ids: dict[tuple[str, int], int]  # (manifest, line) -> label id

    def label_id(self, entry: Entry) -> int:
        return self.label_ids[(entry.manifest, entry.line)]


def parse_line(text: str) -> tuple[str, str] | None:
    """Splits `path label` at the last whitespace run; None for blanks/comments.

    The label is the last field so that paths may contain spaces.
    Raises ValueError when there is no label.
    """
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    parts = stripped.rsplit(maxsplit=1)
    if len(parts) != 2:
        raise ValueError(f"expected '{{video path}} {{label}}', got {stripped!r} (no label)")
    if looks_like_video_file(parts[1]):  # `clip 01.mp4` would be the path `clip`, class `01.mp4`
        raise ValueError(
            f"expected '{{video path}} {{label}}', got {stripped!r}: the label is missing "
            f"({parts[1]!r} is the end of a video file name)"
        )
    return parts[0], parts[1]


def looks_like_video_file(name: str) -> bool:
    """Whether `name` ends in a video file extension (`.mp4`, `.AVI`, ...)."""
    stem, dot, extension = name.rpartition(".")
    return bool(stem and dot) and extension.lower() in VIDEO_EXTENSIONS


def read_manifest(path: epath.Path) -> tuple[list[Entry], list[str]]:
    """Returns the entries of one manifest file and its problems."""
    entries, problems = [], []
    text = path.read_text(encoding="utf-8")
    name = str(path)  # once: an epath's str costs more than parsing its line
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            parsed = parse_line(line)
        except ValueError as e:
            problems.append(f"{path}:{number}: {e}")
            continue
        if parsed is not None:
            entries.append(Entry(name, number, *parsed))
    if not entries and not problems:
        problems.append(f"{path}:1: the manifest has no video lines")
    return entries, problems


def find_manifests(manual_dir: epath.Path) -> dict[str, epath.Path]:
    """Maps each split that has a manifest in `manual_dir` to that file."""
    found = {}
    for split, names in MANIFEST_FILES.items():
        for name in names:
            if (manual_dir / name).exists():
                found[split] = manual_dir / name
                break
    return found


def read_labels_file(path: epath.Path) -> tuple[list[str], list[str]]:
    """Returns the class names of `labels.txt` (line i = id i) and its problems."""
    names, problems, seen = [], [], {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        name = line.strip()
        if not name:
            problems.append(f"{path}:{number}: empty class name (line i must name class i)")
        elif name in seen:
            problems.append(f"{path}:{number}: class {name!r} already on line {seen[name]}")
        else:
            seen[name] = number
        names.append(name)
    return names, problems


def _is_int(label: str) -> bool:
    return label.isascii() and label.isdigit()


def assign_labels(
    entries: Iterable[Entry], class_names: list[str] | None
) -> tuple[list[str], dict[tuple[str, int], int], list[str]]:
    """Maps every entry's label to an id; returns (class names, ids, problems).

    With `class_names` (from labels.txt) a label is a name in it or an id below
    its length. Without, all labels must be of one kind: names -> sorted unique
    names (stable across runs); ids -> names "0".."max id".
    """
    entries = list(entries)
    ids, problems = {}, []
    if class_names is not None:
        index = {name: i for i, name in enumerate(class_names)}
        for e in entries:
            if e.label in index:
                ids[(e.manifest, e.line)] = index[e.label]
            elif _is_int(e.label) and int(e.label) < len(class_names):
                ids[(e.manifest, e.line)] = int(e.label)
            elif _is_int(e.label):
                problems.append(
                    f"{e.where}: label id {e.label} out of range: {LABELS_FILE} has "
                    f"{len(class_names)} classes (ids 0..{len(class_names) - 1})"
                )
            else:
                problems.append(f"{e.where}: label {e.label!r} is not in {LABELS_FILE}")
        return class_names, ids, problems

    numeric = [e for e in entries if _is_int(e.label)]
    named = [e for e in entries if not _is_int(e.label)]
    if numeric and named:
        problems += [
            f"{e.where}: label {e.label!r} is a class name, but other lines use "
            f"integer ids (e.g. {numeric[0].where}); use one kind, or add {LABELS_FILE}"
            for e in named
        ]
        return [], ids, problems
    if numeric:
        class_names = [str(i) for i in range(max(int(e.label) for e in numeric) + 1)]
    else:
        class_names = sorted({e.label for e in named})
    index = {name: i for i, name in enumerate(class_names)}
    for e in entries:
        ids[(e.manifest, e.line)] = int(e.label) if numeric else index[e.label]
    return class_names, ids, problems


def duplicate_problems(entries: Iterable[Entry]) -> list[str]:
    """Reports a video listed twice in one split (it would be trained on twice)."""
    first_seen, problems = {}, []
    for e in entries:
        if e.path in first_seen:
            problems.append(f"{e.where}: {e.path!r} is already listed at {first_seen[e.path]}")
        else:
            first_seen[e.path] = e.where
    return problems


def read_dataset(manual_dir: epath.PathLike) -> Dataset:
    """Reads, validates and labels every manifest in `manual_dir`.

    Raises FileNotFoundError when no manifest exists, ManifestError listing every
    problem otherwise.
    """
    from etils import epath

    manual_dir = epath.Path(manual_dir)
    manifests = find_manifests(manual_dir)
    if not manifests:
        expected = ", ".join(n for names in MANIFEST_FILES.values() for n in names)
        raise FileNotFoundError(
            f"{manual_dir}: no manifest found (expected at least one of {expected})"
        )
    problems, splits = [], {}
    for split, path in manifests.items():
        entries, split_problems = read_manifest(path)
        splits[split] = entries
        problems += split_problems + duplicate_problems(entries)
    class_names = None
    if (manual_dir / LABELS_FILE).exists():
        class_names, label_problems = read_labels_file(manual_dir / LABELS_FILE)
        problems += label_problems
    all_entries = [e for entries in splits.values() for e in entries]
    class_names, ids, label_problems = assign_labels(all_entries, class_names)
    problems += label_problems
    if problems:
        raise ManifestError(problems)
    return Dataset(splits=splits, class_names=class_names, label_ids=ids)


def resolve(manual_dir: epath.PathLike, video_path: str) -> epath.Path:
    """The video's location: absolute paths as they are, others under manual_dir."""
    from etils import epath

    path = epath.Path(video_path)
    return path if path.is_absolute() else epath.Path(manual_dir) / path
