"""Two `built_from`s, what a build is made from (`provenance`) compared, in words: what a rebuild
would change, each change as `FILE:LINE`, and what moved without changing anything.

`differences` is empty when a build of `new` writes what `old`'s build wrote: a reordered
manifest, comments, `num_workers`, and video files found elsewhere or touched but with the
content they had (`file_identity`) change nothing. Else one line (or a few) per kind of
change: config fields and class names `old -> new`; per manifest the lines added, removed and
changed (label or annotation `old -> new`), the video files whose content changed, and the
lines naming the same video by another path (the videos moved and the manifests were written
again), summed up as the part of the paths that changed. `moves` says in one line what moved
without changing an example (a manual dir moved as a whole, or its videos).
"""

from __future__ import annotations

import collections
import datetime
import json
import os
from collections.abc import Callable, Mapping, Sequence

from video_tfrecords.config import RUN_FIELDS  # how a build runs: never a reason to rebuild
from video_tfrecords.records.built_from import FIELDS, FIELDS_1
from video_tfrecords.util.text import plural

FEW = 5  # examples of each kind of change a message shows
# tfds.core.BuilderConfig's own fields: the folder's name and version, and words about it.
BASE_FIELDS = ("name", "version", "release_notes", "supported_versions", "description", "tags")
ITEM_CHARS = 60  # a caption longer than this is cut in a message
ANNOTATION_KEYS = ("labels", "start", "end", "segments", "captions")  # in the order told


def differences(old: Mapping, new: Mapping, few: int = FEW) -> list[str]:
    """What differs between the inputs of `old` and `new` that changes the examples, one line
    (or a few) per kind of change, `few` examples of each; empty when a build of `new` would
    write what `old`'s build wrote."""
    lines = []
    fields = _config_changes(old["config"], new["config"])
    if fields:
        lines.append(f"config {new['config']['name']!r}: {'; '.join(fields)}")
    if old["class_names"] != new["class_names"]:
        lines.append(_class_change(old["class_names"], new["class_names"], few))
    content = _by_content(old)
    for split in dict.fromkeys([*new["splits"], *old["splits"]]):
        was, now = old["splits"].get(split), new["splits"].get(split)
        lines += _split_changes(split, was, now, content, few)
    if lines and old["manual_dir"] != new["manual_dir"]:
        lines.insert(0, f"another manual dir: {old['manual_dir']} -> {new['manual_dir']}")
    if old["encoding_format"] != new["encoding_format"]:
        lines.insert(
            0,
            f"the encoding's format: {old['encoding_format']} -> {new['encoding_format']} (this "
            "video_tfrecords stores frames differently)",
        )
    return lines


def moves(old: Mapping, new: Mapping, few: int = FEW) -> str | None:
    """What moved between `old` and `new` without changing an example, in one line: the
    manual dir, and the video files found at other paths with the same content (the
    manifests' paths being the same, relative to it); None if nothing did."""
    if not _by_content(old):
        return None
    files = []
    for split, now in new["splits"].items():
        was = old["splits"].get(split)
        if was is not None and was["videos"] != now["videos"]:
            same, _, _ = _pair(_rows(was["videos"], FIELDS), _rows(now["videos"], FIELDS), _whole)
            files += [(a["file"], b["file"]) for a, b in same if a["file"] != b["file"]]
    parts, folders = [], (old["manual_dir"], new["manual_dir"])
    if folders[0] != folders[1]:
        parts.append(f"the manual dir {folders[0]} -> {folders[1]}")
        inside = lambda a, b: (
            a.startswith(folders[0] + "/") and b == folders[1] + a[len(folders[0]) :]
        )
        with_it = [pair for pair in files if inside(*pair)]
        if with_it:
            parts[0] += f" (with {_count(with_it, 'video file')} in it)"
            files = [pair for pair in files if not inside(*pair)]
    if files:
        parts.append(f"{_count(files, 'video file')}: {_path_changes(files, 'file', few)}")
    return f"moved, with the same content: {'; '.join(parts)}" if parts else None


def _by_content(built_from: Mapping) -> bool:
    """Whether a `built_from` knows its videos by content (format 2 on), not by stat alone."""
    return built_from.get("format", 1) >= 2


def _config_changes(old: Mapping, new: Mapping) -> list[str]:
    ignored = set(BASE_FIELDS) | set(RUN_FIELDS)
    names = [n for n in new if n not in ignored] + [n for n in old if n not in new]
    return [
        f"{name} {_value(old.get(name))} -> {_value(new.get(name))}"
        for name in dict.fromkeys(names)
        if name not in ignored and old.get(name) != new.get(name)
    ]


def _value(value) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _class_change(old: list[str], new: list[str], few: int) -> str:
    changed = [
        f"id {i}: {_name(old, i)} -> {_name(new, i)}"
        for i in range(max(len(old), len(new)))
        if _name(old, i) != _name(new, i)
    ]
    return (
        f"class names ({len(old)} -> {len(new)} classes): "
        + ", ".join(changed[:few])
        + (f", ... ({len(changed)} ids)" if len(changed) > few else "")
    )


def _name(names: list[str], i: int) -> str:
    return repr(names[i]) if i < len(names) else "none"


# -- a split's lines -----------------------------------------------------------------------


def _rows(videos: list[list], layout: tuple[str, ...]) -> list[dict]:
    return [dict(zip(layout, v)) for v in videos]


def _text(v: Mapping) -> tuple:
    """A line as written: path, label, annotation."""
    return v["path"], v["label"], v["annotation"] and json.dumps(v["annotation"], sort_keys=True)


def _whole(v: Mapping) -> tuple:
    """A line as written, and its video's content."""
    return _text(v), v.get("content")


def _pair(before: list[dict], after: list[dict], key: Callable[[dict], object]):
    """Lines of `before` and `after` with one key paired, in order (a key None pairs nothing):
    (pairs, the rest of before, the rest of after)."""
    waiting = collections.defaultdict(collections.deque)
    for v in before:
        if (k := key(v)) is not None:
            waiting[k].append(v)
    pairs, rest = [], []
    for v in after:
        queue = waiting.get(key(v))
        if queue:
            pairs.append((queue.popleft(), v))
        else:
            rest.append(v)
    paired = {id(was) for was, _ in pairs}
    return pairs, [v for v in before if id(v) not in paired], rest


def _split_changes(
    split: str, old: Mapping | None, new: Mapping | None, content: bool, few: int
) -> list[str]:
    """A split's changes: its manifest's lines added, removed and changed (another label or
    annotation, for a video named by one line each side), its videos' files changed, its
    videos named by other paths. Lines are compared by content, not number: a reordered
    manifest is no change."""
    if old is None:
        return [f"split {split}: a new manifest, {new['file']} ({_count(new['videos'], 'line')})"]
    if new is None:
        gone = f"{old['file']}, {_count(old['videos'], 'line')}"
        return [f"split {split}: no manifest now (it was {gone})"]
    if old["videos"] == new["videos"] and old["file"] == new["file"]:
        return []  # the usual case, at C speed (a 650k-line split: 0.1 s, not 10)
    before = _rows(old["videos"], FIELDS if content else FIELDS_1)
    after = _rows(new["videos"], FIELDS)
    same, before, after = _pair(before, after, _whole if content else _text)
    moved = []
    if content:  # the same video and annotation under another path: the videos moved
        again = lambda v: v["content"] and (_text(v)[1:], v["content"])
        moved, before, after = _pair(before, after, again)
    # A line each side naming one path (or, moved, one video): the same line, changed.
    paired = []
    for field in ("path", "content") if content else ("path",):
        single = _once(before, field) & _once(after, field)
        found, before, after = _pair(
            before, after, lambda v, f=field, s=single: v[f] if v[f] in s else None
        )
        paired += found
    here = lambda v: f"{new['file']}:{v['line']}: {v['path']}"
    changed, replaced = [], []
    for was, now in paired + ([] if content else same):
        line, file = _line_change(was, now), _file_change(was, now, content)
        if line:
            changed.append(f"{here(now)}: {line}" + (f"; its file: {file}" if file else ""))
        elif file:
            replaced.append(f"{here(now)}: {file}")
    name = os.path.basename(new["file"])
    kinds = (
        ("line", "added", [here(v) for v in after]),
        ("line", "removed (as the build had them)",
         [f"{old['file']}:{v['line']}: {v['path']}" for v in before]),
        ("line", "changed", changed),
        ("video file", "changed", replaced),
    )  # fmt: skip
    lines = [f"{name}: {_count(items, what)} {kind}: {_few(items, few)}"
             for what, kind, items in kinds if items]  # fmt: skip
    if moved:
        paths = [(was["path"], now["path"]) for was, now in moved]
        lines.append(
            f"{name}: {_count(moved, 'line')} name{'s' * (len(moved) == 1)} the same video "
            f"(the same content) by another path: {_path_changes(paths, 'line', few)}"
        )
    return lines


def _once(videos: list[dict], field: str) -> set:
    """The values of `field` that one line of `videos` has (not None)."""
    counts = collections.Counter(v[field] for v in videos)
    return {value for value, n in counts.items() if n == 1 and value is not None}


def _line_change(was: Mapping, now: Mapping) -> str | None:
    """How one video's line differs, `old -> new`: its label, its annotation's keys (JSON
    Lines'); None if it does not."""
    parts = []
    if was["label"] != now["label"]:
        parts.append(f"label {was['label']} -> {now['label']}")
    before, after = was["annotation"] or {}, now["annotation"] or {}
    keys = [k for k in ANNOTATION_KEYS if before.get(k) != after.get(k)]
    keys = keys or [k for k in {**before, **after} if before.get(k) != after.get(k)]
    for key in keys:  # the keys a line has ("fields") only when no value tells
        a, b = before.get(key), after.get(key)
        if isinstance(a, list) or isinstance(b, list):
            a, b = a or [], b or []
            gone, new = _minus(a, b), _minus(b, a)
            shown = "keys" if key == "fields" else key
            parts.append(f"{shown} {_items(key, gone)} -> {_items(key, new)}")
        else:
            parts.append(f"{key} {'none' if a is None else a} -> {'none' if b is None else b}")
    if parts and was["path"] != now["path"]:
        parts.append(f"the same video, moved from {was['path']}")
    return "; ".join(parts) or None


def _minus(items: list, others: list) -> list:
    """The items of `items` that `others` does not hold as many times, in order."""
    counts = collections.Counter(json.dumps(item) for item in others)
    kept = []
    for item in items:
        if counts[json.dumps(item)] > 0:
            counts[json.dumps(item)] -= 1
        else:
            kept.append(item)
    return kept


def _items(key: str, items: list) -> str:
    """An annotation's list items in words: labels and keys by name, segments and timed
    captions with their times."""
    if not items:
        return "none"

    def one(item) -> str:
        if key == "fields":
            return item
        if not isinstance(item, list):
            return json.dumps(item, ensure_ascii=False)
        text, start, end = item
        if len(text) > ITEM_CHARS:
            text = text[: ITEM_CHARS - 3] + "..."
        times = "" if start is None and end is None else f" [{_s(start)}, {_s(end)}) s"
        return json.dumps(text, ensure_ascii=False) + times

    shown = ", ".join(map(one, items[:FEW]))
    return shown + (f", ... ({len(items)} in all)" if len(items) > FEW else "")


def _s(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds:g}"


def _file_change(was: Mapping, now: Mapping, content: bool) -> str | None:
    """How a video's file differs, in words; None when it is the same file (by content, or for
    an earlier `built_from`, by path, size and modification time)."""
    if was["size"] is None or now["size"] is None:
        if was["size"] == now["size"]:
            return None
        return "found now (missing before)" if was["size"] is None else "missing now"
    if content and was["content"] == now["content"] and now["content"] is not None:
        return None
    if not content and was["file"] != now["file"]:
        return f"another file, {was['file']} -> {now['file']}"
    parts = [f"another file, {was['file']} -> {now['file']}"] if was["file"] != now["file"] else []
    if was["size"] != now["size"]:
        parts.append(f"{was['size']:,} -> {now['size']:,} bytes")
    if was["mtime"] != now["mtime"]:
        parts.append(f"modified {_when(was['mtime'])} -> {_when(now['mtime'])}")
    if content and now["content"] is None:
        parts.append("cannot be read now")
    elif content and not parts:
        parts.append("other content at the same size and modification time")
    return ", ".join(parts) or None


def _path_changes(pairs: list[tuple[str, str]], what: str, few: int) -> str:
    """Paths changed, summed up as the part that changed (`/a/videos/x.mp4 -> /b/videos/x.mp4`:
    `/a -> /b`), each such change once, with its count when there are several."""
    counts = collections.Counter(_changed_part(a, b) for a, b in pairs)
    if len(counts) == 1:
        (a, b), _ = counts.popitem()
        return f"{a} -> {b}"
    shown = [f"{a} -> {b} ({plural(n, what)})" for (a, b), n in counts.most_common(few)]
    more = f"; ... and {len(counts) - few} more" if len(counts) > few else ""
    return "; ".join(shown) + more


def _changed_part(a: str, b: str) -> tuple[str, str]:
    """`a` and `b` without the path components they end with alike."""
    x, y = a.split("/"), b.split("/")
    while len(x) > 1 and len(y) > 1 and x[-1] == y[-1]:
        x, y = x[:-1], y[:-1]
    return "/".join(x) or "/", "/".join(y) or "/"


def _when(mtime: float) -> str:
    """A modification time (ns as os.stat gives it, or seconds as epath's stat) in UTC."""
    seconds = mtime / 1e9 if isinstance(mtime, int) and mtime > 1e12 else mtime
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(sep=" ", timespec="milliseconds").replace("+00:00", " UTC")


def _count(items: Sequence, what: str) -> str:
    return f"{len(items)} {what}{'' if len(items) == 1 else 's'}"


def _few(items: Sequence[str], few: int) -> str:
    more = f"; ... and {len(items) - few} more" if len(items) > few else ""
    return "; ".join(items[:few]) + more
