"""The tiles of `show`: each view of each chosen example, titled, and its crop boxes.

A view's tile holds what `ClipSource` gives (the clip as a model sees it);
its title says the class, the file, the times and frames the clip took (from
`ClipSource.plan`, the same draw as the clip) and its flip and box. With
boxes, each clip also gets a tile of its full stored frames with every view's
box drawn: those frames come from a second ClipSource without crop, flip or
short_side, whose frame choice (same seed, mode, stride, fps) is the same.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from video_tfrecords.clip_source import ClipSource
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
    )


def full_frame_source(source: ClipSource, clip_args: dict) -> ClipSource:
    """A source of the same split giving the whole stored frames of the same clips."""
    args = {k: v for k, v in clip_args.items() if k not in _PLACEMENT}
    return ClipSource(source.split, dataset_dir=source.dataset_dir, **args)


def _views(array: np.ndarray, multi: bool) -> np.ndarray:
    """An output with a leading view axis."""
    return array if multi else array[None]


def _heading(source: ClipSource, index: int, video: StoredVideo) -> list[str]:
    """The example's title lines: class, index (and epoch), file (and part)."""
    names = source.label_names or []
    name = names[video.label] if 0 <= video.label < len(names) else "?"
    epoch, record = divmod(index, len(source))
    epoch = f", epoch {epoch}" if epoch else ""
    part = f" [part {video.segment}]" if video.segment else ""
    return [f"{name} (label {video.label}), #{record}{epoch}: {video.filename}{part}"]


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


def _display_box(box: np.ndarray, frame_size, shown_size) -> np.ndarray:
    """A stored-pixel box (y, x, h, w) in the pixels of frames shown at `shown_size`."""
    sy, sx = shown_size[0] / frame_size[0], shown_size[1] / frame_size[1]
    y0, x0 = round(box[0] * sy), round(box[1] * sx)
    y1, x1 = round((box[0] + box[2]) * sy), round((box[1] + box[3]) * sx)
    return np.array([y0, x0, max(y1 - y0, 1), max(x1 - x0, 1)])


def _draw_boxes(frames: np.ndarray, plan: ViewPlan, views: range, clip: str) -> str:
    """Draws each view's box (a colour each, its number, F if flipped) on every frame of the
    clip's full frames; returns the tile's title."""
    for v in views:
        colour = tiles.BOX_COLOURS[v % len(tiles.BOX_COLOURS)]
        box = _display_box(plan.boxes[v], plan.frame_size, frames.shape[1:3])
        label = f"{v + 1}" + ("F" if plan.flip[v] else "")
        for frame in frames:
            tiles.draw_box(frame, box, colour, label)
    first, last = views[0] + 1, views[-1] + 1
    which = f"boxes of views {first}-{last}" if last > first else f"box of view {first}"
    flipped = " (F: flipped)" if plan.flip.any() else ""
    return f"{clip}: {which}{flipped} on the stored frames"


def example_tiles(
    source: ClipSource,
    index: int,
    records: SplitRecords,
    frame_height: int | None,
    full_source: ClipSource | None = None,
) -> list[tiles.Tile]:
    """The tiles of `source[index]`: per clip its boxes tile (with `full_source`), then the
    tile of each of its views."""
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
            frames = tiles.scaled(full[clip], frame_height).copy()
            title = _draw_boxes(frames, plan, views, f"clip {clip + 1}/{spec.num_clips}")
            out.append(tiles.Tile(heading, [f"{title}, {_when(video, plan.indices[views[0]])}"],
                                  frames))  # fmt: skip
        for v in views:
            line = f"view {v + 1}/{spec.num_views}: {_when(video, plan.indices[v])}"
            if spec.crop_size is not None:
                line += f"; {_box_text(plan.boxes[v], plan.frame_size)}"
            if plan.short_sides is not None:
                line += f", short side {plan.short_sides[v]}"
            title = [line + (", flipped" if plan.flip[v] else "")]
            sound = None if audio is None else audio[v]
            out.append(tiles.Tile(heading, title, tiles.scaled(clips[v], frame_height), sound))
    return out
