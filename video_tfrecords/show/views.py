"""The tiles of `show`: each view of each chosen example, titled, and its crop boxes.

A view's tile holds what `ClipSource` gives (the clip as a model sees it);
its title says the class (or the labels), the file, the times and frames the
clip took (from `ClipSource.plan`, the same draw as the clip), its flip and
box, and with stored annotations the clip's labels (`labels="clip"`), the
segment it was drawn in (`segment=True`) and its caption(s). With boxes, each
clip also gets a tile of its full stored frames with every view's box drawn:
those frames come from a second ClipSource without crop, flip or short_side,
whose frame choice (same seed, mode, stride, fps) is the same.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from video_tfrecords.clip_source import ClipSource
from video_tfrecords.clips import labels
from video_tfrecords.show import tiles
from video_tfrecords.show.stored import SplitRecords, StoredVideo

__all__ = ["ViewPlan", "example_tiles", "full_frame_source", "view_plan"]

# ClipSpec fields that change where a view's pixels come from, not which frames: dropped for
# the full-frame source.
_PLACEMENT = ("crop_size", "crop", "crop_area", "crop_aspect", "flip", "short_side", "num_crops",
              "audio")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ViewPlan:
    """What `source[index]` took, per view v: frames, flip and box in stored pixels."""

    indices: np.ndarray  # int [V, T], -1 = a padded frame
    flip: np.ndarray  # bool [V]
    boxes: np.ndarray  # float [V, 4]: y, x, h, w in the stored frame's pixels
    frame_size: tuple[int, int]  # the stored frame's (h, w)
    short_sides: np.ndarray | None  # int [V]: each view's drawn short side (scale jitter)
    frame_range: tuple[int, int]  # [first, stop) of the stored frames drawn from (a segment's)


def view_plan(source: ClipSource, index: int) -> ViewPlan:
    """`source.plan(index)`, the same draw as `source[index]`, as arrays of one shape."""
    plan = source.plan(index)
    views = source.spec.num_views
    return ViewPlan(
        indices=np.asarray(plan["indices"]).reshape(views, -1),
        flip=np.asarray(plan["flip"], bool).reshape(views),
        boxes=np.asarray(plan["boxes"], np.float64).reshape(views, 4),
        frame_size=tuple(int(s) for s in np.asarray(plan["frame_size"]).reshape(2)),
        short_sides=np.asarray(plan["short_side"]).reshape(views) if "short_side" in plan else None,
        frame_range=tuple(int(v) for v in plan["frame_range"]),
    )


def full_frame_source(source: ClipSource, clip_args: dict) -> ClipSource:
    """A source of the same split giving the whole stored frames of the same clips."""
    args = {k: v for k, v in clip_args.items() if k not in _PLACEMENT}
    return ClipSource(source.split, dataset_dir=source.dataset_dir, **args)


def _views(array: np.ndarray, multi: bool) -> np.ndarray:
    """An output with a leading view axis."""
    return array if multi else array[None]


def _names(classes, names: list[str]) -> str:
    """'Holding some clothes; Walking (labels 0, 5)', or 'no label'."""
    if not len(classes):
        return "no label"
    named = "; ".join(names[c] if 0 <= c < len(names) else "?" for c in classes)
    return f"{named} (label{'s' if len(classes) > 1 else ''} {', '.join(map(str, classes))})"


def _heading(source: ClipSource, index: int, video: StoredVideo) -> list[str]:
    """The example's title line: its class or labels, index (and epoch), file (part, span)."""
    names = source.label_names or []
    if video.labels is None:  # a text manifest's build: one class an example
        name = names[video.label] if 0 <= video.label < len(names) else "?"
        classes = f"{name} (label {video.label})"
    else:
        classes = _names(video.classes, names)
    epoch, record = divmod(index, len(source))
    epoch = f", epoch {epoch}" if epoch else ""
    part = f" [part {video.segment}]" if video.segment else ""
    span = f", span {video.span[0]:.2f}-{video.span[1]:.2f} s" if video.span else ""
    return [f"{classes}, #{record}{epoch}: {video.filename}{part}{span}"]


def _when(video: StoredVideo, frames: np.ndarray) -> str:
    """'1.20-2.40 s, frames 30-60' for the frames a view took (padding counted apart)."""
    taken = frames[frames >= 0]
    padded = len(frames) - len(taken)
    if not len(taken):
        return f"{padded} padded frames"
    start, end = video.times[taken[0]], video.times[taken[-1]]
    text = f"{start:.2f}-{end:.2f} s, frames {taken[0]}-{taken[-1]}"
    return text + (f" +{padded} padded" if padded else "")


def _box_text(box: np.ndarray, frame_size: tuple[int, int]) -> str:
    y, x, h, w = (round(float(v)) for v in box)
    return f"box {h}x{w} at y={y} x={x} of {frame_size[0]}x{frame_size[1]}"


def _segment_text(video: StoredVideo, frame_range, names: list[str]) -> str:
    """The stored segment a `segment=True` clip was drawn in: the one whose frames, by
    `labels.segment_range`'s rule, are the range the plan drew from (several: same frames)."""
    first, stop = (int(v) for v in frame_range)
    whole = (first, stop) == (0, video.num_frames)
    found = []
    for label, start, end in video.segments:
        own = labels.segment_range(video.times, [start], [end], 0)
        holds_frames = video.num_frames and start <= video.times[-1] and end > video.times[0]
        if tuple(own) == (first, stop) and (holds_frames or not whole):
            name = names[label] if 0 <= label < len(names) else f"label {label}"
            found.append(f"{name} {start:.2f}-{end:.2f} s")
    if found:
        return "in segment " + "; ".join(found)
    if not video.segments:
        return "no segment: drawn from the whole example"
    return "its segment holds no frame: drawn from the whole example"


def _caption_text(example: dict, view: int, multi: bool) -> str | None:
    """The view's caption ("random") or captions ("all") as ClipSource gave them."""
    for key in ("caption", "captions"):
        if key in example:
            value = example[key][view] if multi else example[key]
            break
    else:
        return None
    if isinstance(value, str):
        return f'caption: "{value}"' if value else "caption: none"
    if not value:
        return "captions: none"
    return "captions: " + " | ".join(f'"{text}"' for text in value)


def _annotation_lines(
    source: ClipSource, example: dict, view: int, video: StoredVideo, frame_range
) -> list[str]:
    """The view's clip labels (labels="clip"), segment (segment=True) and caption(s), as one
    line (wrapped where the tile is narrow)."""
    spec, names = source.spec, source.label_names or []
    lines = []
    if "labels" in example and spec.labels == "clip":
        multi_hot = example["labels"][view] if spec.multi_clip else example["labels"]
        lines.append(f"clip labels: {_names(np.flatnonzero(multi_hot).tolist(), names)}")
    if spec.segment and video.labels is not None:
        lines.append(_segment_text(video, frame_range, names))
    caption = _caption_text(example, view, spec.multi_clip)
    lines += [caption] if caption else []
    return [" | ".join(lines)] if lines else []


def _box_marks(plan: ViewPlan, views: range, clip: str) -> tuple[tuple, str]:
    """Each view's box (a colour each, its number, F if flipped) to draw on the clip's full
    frames, and the tile's title."""
    marks = tuple(
        (plan.boxes[v], tiles.BOX_COLOURS[v % len(tiles.BOX_COLOURS)],
         f"{v + 1}" + ("F" if plan.flip[v] else ""))
        for v in views
    )  # fmt: skip
    first, last = views[0] + 1, views[-1] + 1
    which = f"boxes of views {first}-{last}" if last > first else f"box of view {first}"
    flipped = " (F: flipped)" if plan.flip.any() else ""
    return marks, f"{clip}: {which}{flipped} on the stored frames"


def example_tiles(
    source: ClipSource,
    index: int,
    records: SplitRecords,
    full_source: ClipSource | None = None,
) -> list[tiles.Tile]:
    """The tiles of `source[index]`, frames as decoded (`tiles.at_height` scales them and draws
    the boxes): per clip its boxes tile (with `full_source`), then the tile of each view."""
    spec = source.spec
    example = source[index]
    plan = view_plan(source, index)
    video = records.video(index % len(source))
    heading = _heading(source, index, video)
    clips = _views(example["video"], spec.multi_clip)
    audio = _views(example["audio"], spec.multi_clip) if spec.audio else None
    full = None
    if full_source is not None:
        full = _views(full_source[index]["video"], full_source.spec.multi_clip)
        full_indices = np.asarray(full_source.plan(index)["indices"]).reshape(len(full), -1)
        if not np.array_equal(full_indices, plan.indices[:: spec.num_crops]):
            raise RuntimeError(
                f"The full-frame source took other frames than the clip of example {index}: "
                "cannot draw its boxes."
            )
    out = []
    for clip in range(spec.num_clips):
        views = range(clip * spec.num_crops, (clip + 1) * spec.num_crops)
        if full is not None:
            marks, title = _box_marks(plan, views, f"clip {clip + 1}/{spec.num_clips}")
            title = [f"{title}, {_when(video, plan.indices[views[0]])}"]
            out.append(tiles.Tile(heading, title, full[clip], boxes=marks))
        for v in views:
            line = f"view {v + 1}/{spec.num_views}: {_when(video, plan.indices[v])}"
            if spec.crop_size is not None:
                line += f"; {_box_text(plan.boxes[v], plan.frame_size)}"
            if plan.short_sides is not None:
                line += f", short side {plan.short_sides[v]}"
            title = [line + (", flipped" if plan.flip[v] else "")]
            title += _annotation_lines(source, example, v, video, plan.frame_range)
            sound = None if audio is None else audio[v]
            out.append(tiles.Tile(heading, title, clips[v], sound))
    return out
