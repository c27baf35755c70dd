"""Reads and validates the manifests of a manual dir: `{video path} {label}` text, or JSON
Lines (`jsonl_manifest`) for spans, several labels, segments and captions.

Every problem in every manifest is collected and reported in one
`ManifestError`, each as `FILE:LINE: reason`, before any video is decoded: a
typo on line 90,000 should cost seconds, not the hours of decoding before it.
A line with a problem is still checked with the others (its labels, whether it repeats
one), so that fixing what one run names never reveals more that were there all along.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from video_tfrecords.ingest import jsonl_manifest
from video_tfrecords.ingest.jsonl_manifest import Annotation

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
# The JSON Lines manifest of each split (`jsonl_manifest`): a split has one kind or the other.
JSONL_FILES: Mapping[str, tuple[str, ...]] = {
    split: tuple(name.removesuffix(".txt") + ".jsonl" for name in names)
    for split, names in MANIFEST_FILES.items()
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
    label: str | None  # the label exactly as written (a class name or an integer id)
    annotation: Annotation | None = None  # a JSON Lines line's other keys

    @property
    def where(self) -> str:
        return f"{self.manifest}:{self.line}"

    def labels(self) -> tuple[str, ...]:
        """Every label the line names: `label`, then the annotation's labels."""
        own = () if self.label is None else (self.label,)
        return own + (self.annotation.all_labels() if self.annotation else ())

    @property
    def span(self) -> tuple[float, float]:
        """The part of the video the line stores: (0, inf) for all of it."""
        return self.annotation.span if self.annotation else (0.0, float("inf"))


@dataclasses.dataclass(frozen=True)
class Dataset:
    """The validated content of a manual dir."""

    splits: dict[str, list[Entry]]  # split name -> entries, in manifest order
    class_names: list[str]  # label id i is class_names[i]
    ids: dict[str, int]  # every label as written -> its id

    def label_id(self, entry: Entry) -> int:
        """The entry's `label` id; -1 (TFDS's "no label") for a JSON line without one."""
        return -1 if entry.label is None else self.ids[entry.label]


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


def read_manifest(path: epath.Path) -> tuple[list[Entry], list[str], list[tuple[Entry, bool]]]:
    """The entries of one manifest file (text or JSON Lines), its problems, and its lines with
    problems as far as they could be read, each with whether its span is known: checked for
    labels and duplicates with the others (one run names every problem), never built."""
    entries, partial, name = [], [], str(path)  # once: an epath's str costs more than a line
    if path.name.endswith(".jsonl"):
        lines, problems, unsure = jsonl_manifest.read_lines(path)
        entries = [Entry(name, *line) for line in lines]
        partial = [
            (Entry(name, number, p.path, p.label, p.annotation), p.span_known)
            for number, p in unsure
        ]
    else:
        problems = []
        for number, line, problem in text_lines(path):
            try:
                parsed = parse_line(line) if problem is None else None
            except ValueError as e:
                problem = str(e)
                partial.append((Entry(name, number, line.strip(), None), True))
            if problem is not None:
                problems.append(f"{path}:{number}: {problem}")
            elif parsed is not None:
                entries.append(Entry(name, number, *parsed))
    if not entries and not problems:
        problems.append(f"{path}:1: the manifest has no video lines")
    return entries, problems, partial


def text_lines(path: epath.Path) -> list[tuple[int, str, str | None]]:
    """(line number, text, problem) for each line of a text file (`str.splitlines`' lines),
    read past a UTF-8 byte order mark: a line that is not UTF-8 gives where its first bad
    byte is (as `jsonl_manifest.decode_lines`), a UTF-16 file one problem."""
    data, problem = jsonl_manifest.without_bom(path.read_bytes())
    if problem:
        return [(1, "", problem)]
    try:
        return [(n, line, None) for n, line in enumerate(data.decode("utf-8").splitlines(), 1)]
    except UnicodeDecodeError:
        pass
    lines = []
    for number, line in enumerate(data.decode("utf-8", "surrogateescape").splitlines(), 1):
        raw = line.encode("utf-8", "surrogateescape")
        lines.append((number, line, jsonl_manifest.not_utf8(raw)))
    return lines


def find_manifests(manual_dir: epath.Path) -> tuple[dict[str, epath.Path], list[str]]:
    """Maps each split that has a manifest in `manual_dir` to that file; a problem for a split
    with both a text and a JSON Lines manifest (which one is meant is not for us to guess)."""
    found, problems = {}, []
    for split in MANIFEST_FILES:
        text, lines = (
            next((manual_dir / n for n in kind[split] if (manual_dir / n).exists()), None)
            for kind in (MANIFEST_FILES, JSONL_FILES)
        )
        if text is not None and lines is not None:
            problems.append(
                f"{lines}:1: split {split!r} has a text manifest too ({text}): keep one of them"
            )
        if text is not None or lines is not None:
            found[split] = lines or text
    return found, problems


def read_labels_file(path: epath.Path) -> tuple[list[str], list[str]]:
    """Returns the class names of `labels.txt` (line i = id i) and its problems."""
    names, problems, seen = [], [], {}
    for number, line, problem in text_lines(path):
        name = line.strip()
        if problem:
            problems.append(f"{path}:{number}: {problem}")
        elif not name:
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
) -> tuple[list[str], dict[str, int], list[str]]:
    """Maps every label the entries name to an id; returns (class names, ids, problems).

    With `class_names` (from labels.txt) a label is a name in it or an id below
    its length. Without, all labels must be of one kind: names -> sorted unique
    names (stable across runs); ids -> names "0".."max id".
    """
    named = [(e.where, label) for e in entries for label in e.labels()]  # (where, label)
    ids, problems = {}, []
    if class_names is not None:
        index = {name: i for i, name in enumerate(class_names)}
        for where, label in named:
            if label in index:
                ids[label] = index[label]
            elif _is_int(label) and int(label) < len(class_names):
                ids[label] = int(label)
            elif _is_int(label):
                problems.append(
                    f"{where}: label id {label} out of range: {LABELS_FILE} has "
                    f"{len(class_names)} classes (ids 0..{len(class_names) - 1})"
                )
            else:
                problems.append(
                    f"{where}: label {label!r} is not in {LABELS_FILE}"
                    + nearest_class(label, class_names)
                )
        return class_names, ids, problems

    numeric = [(where, label) for where, label in named if _is_int(label)]
    names = [(where, label) for where, label in named if not _is_int(label)]
    if numeric and names:
        problems += [
            f"{where}: label {label!r} is a class name, but other lines use "
            f"integer ids (e.g. {numeric[0][0]}); use one kind, or add {LABELS_FILE}"
            for where, label in names
        ]
        return [], ids, problems
    if numeric:
        class_names = [str(i) for i in range(max(int(label) for _, label in numeric) + 1)]
        return class_names, {label: int(label) for _, label in numeric}, problems
    class_names = sorted({label for _, label in names})
    return class_names, {name: i for i, name in enumerate(class_names)}, problems


def nearest_class(label: str, class_names: Sequence[str]) -> str:
    """`" (did you mean 'x'?)"` for the class name nearest to a label (a typo, another case,
    spaces for underscores), or nothing when none is near."""
    folded = {name.casefold().replace("_", " "): name for name in class_names}
    key = label.casefold().replace("_", " ")
    near = difflib.get_close_matches(key, list(folded), n=1, cutoff=0.75)
    return f" (did you mean {folded[near[0]]!r}?)" if near else ""


def duplicate_problems(entries: Iterable[Entry]) -> list[str]:
    """Reports a video (or one span of it) listed twice in one split (it would be trained on
    twice). Spans of one video may overlap: each is an example of its own."""
    first_seen, problems = {}, []
    for e in entries:
        key = (e.path, e.span)
        if key in first_seen:
            whole = e.annotation is None or e.span == (0.0, float("inf"))
            span = "" if whole else f" with the same span {_seconds(e.span)}"
            problems.append(f"{e.where}: {e.path!r} is already listed at {first_seen[key]}{span}")
        else:
            first_seen[key] = e.where
    return problems


def in_several_splits(
    splits: Mapping[str, list[Entry]], files: Mapping[str, Mapping[str, Hashable]]
) -> list[dict[str, list[Entry]]]:
    """The videos named in more than one split (a model evaluated on what it was trained on),
    each as its lines by split. `files`: split -> path as written -> the file it names, equal
    for one file however written (the build's: the path resolved against the manual dir and
    normalized, so `v/a.mp4`, `./v/a.mp4` and its absolute path are one video; links and
    copies are not followed). A dict look-up a path."""
    first: dict[Hashable, str] = {}  # file -> the first split naming it
    shared: dict[Hashable, dict[str, list[Entry]]] = {}
    for split, paths in files.items():
        for file in paths.values():
            if first.setdefault(file, split) != split:
                shared[file] = {}
    if shared:
        for split, entries in splits.items():
            for entry in entries:
                lines = shared.get(files[split][entry.path])
                if lines is not None:
                    lines.setdefault(split, []).append(entry)
    return list(shared.values())


def in_line_order(problems: list[str], files: Sequence[str]) -> list[str]:
    """`FILE:LINE: reason` problems file by file (in the order of `files`), each file's by line
    (a line's own in the order found): what a user fixes from the top of each file down."""

    def place(problem: str) -> tuple[int, int]:
        for rank, file in enumerate(files):
            number = problem[len(file) + 1 :].partition(":")[0]
            if problem.startswith(f"{file}:") and number.isdigit():
                return rank, int(number)
        return len(files), 0

    return sorted(problems, key=place)


def _seconds(span: tuple[float, float]) -> str:
    return f"[{span[0]:g} s, {span[1]:g} s)"


def read_dataset(manual_dir: epath.PathLike) -> Dataset:
    """Reads, validates and labels every manifest in `manual_dir`.

    Raises FileNotFoundError when no manifest exists, ManifestError listing every
    problem otherwise.
    """
    from etils import epath

    manual_dir = epath.Path(manual_dir)
    manifests, problems = find_manifests(manual_dir)
    if not manifests:
        expected = ", ".join(n for names in MANIFEST_FILES.values() for n in names)
        raise FileNotFoundError(
            f"{manual_dir}: no manifest found (expected at least one of {expected}, "
            "or the same names ending in .jsonl)"
        )
    splits, unsure = {}, []
    for split, path in manifests.items():
        entries, split_problems, partial = read_manifest(path)
        splits[split] = entries
        known = [e for e, sure in partial if sure]
        spans = sorted([*entries, *known], key=lambda e: e.line) if known else entries
        problems += split_problems + duplicate_problems(spans)
        unsure += [e for e, _ in partial]
    class_names = None
    if (manual_dir / LABELS_FILE).exists():
        class_names, label_problems = read_labels_file(manual_dir / LABELS_FILE)
        problems += label_problems
    all_entries = [e for entries in splits.values() for e in entries]
    class_names, ids, label_problems = assign_labels(all_entries + unsure, class_names)
    problems += label_problems
    if problems:
        files = [str(manual_dir / LABELS_FILE), *map(str, manifests.values())]
        raise ManifestError(in_line_order(problems, files))
    return Dataset(splits=splits, class_names=class_names, ids=ids)


def resolve(manual_dir: epath.PathLike, video_path: str) -> epath.Path:
    """The video's location: absolute paths as they are, others under manual_dir."""
    from etils import epath

    path = epath.Path(video_path)
    return path if path.is_absolute() else epath.Path(manual_dir) / path
