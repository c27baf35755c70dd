"""`ClipSpec`: what clip to take from a video, validated once.

`ClipDecoder`, `clip_dataset` and `ClipSource` take the same arguments and
keep them in one `ClipSpec`, so the rules (and the error messages) live here
only. Imports neither TensorFlow nor TFDS.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

__all__ = ["ClipSpec", "check_positive_int", "is_int"]

MODES = ("random", "center", "uniform")
SHORT_VIDEO_POLICIES = ("loop", "repeat_last", "pad", "error")
CROP_MODES = ("random", "center")


def is_int(value) -> bool:
    """True for Python and NumPy integers, but not for bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_positive_int(name: str, value) -> int:
    """`value` as an int, or a ValueError naming the argument."""
    if not is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return int(value)


def _check_stride(stride) -> int | tuple[int, int]:
    """A positive int, or an inclusive (min, max) range (a one-value range becomes an int)."""
    if is_int(stride):
        return check_positive_int("stride", stride)
    if isinstance(stride, (tuple, list)) and len(stride) == 2 and all(map(is_int, stride)):
        lo, hi = int(stride[0]), int(stride[1])
        if 0 < lo <= hi:
            return (lo, hi) if lo < hi else lo
    raise ValueError(
        "stride must be a positive int or a (min, max) tuple of ints with "
        f"0 < min <= max, got {stride!r}."
    )


def _check_choice(name: str, value, choices: tuple[str, ...]) -> str:
    """`value` if it is one of `choices`, else a ValueError naming the argument."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def _check_crop_size(crop_size) -> tuple[int, int] | None:
    """None, or two positive ints (h, w) as a tuple."""
    if crop_size is None:
        return None
    if (
        isinstance(crop_size, (tuple, list))
        and len(crop_size) == 2
        and all(is_int(s) and s > 0 for s in crop_size)
    ):
        return int(crop_size[0]), int(crop_size[1])
    raise ValueError(f"crop_size must be None or two positive ints (h, w), got {crop_size!r}.")


@dataclasses.dataclass(frozen=True)
class ClipSpec:
    """Which clip(s) to take from a video of JPEG frames, and how to crop, flip and resize them.

    Args:
        num_frames: frames per clip (T).
        stride: step between frames, or an inclusive (min, max) range from which
            each clip draws its step (frame-rate jitter), capped so that the clip
            fits in the video when possible.
        mode: "random" (start uniform over all valid starts), "center" (start
            (L - span) // 2, span = (T - 1) * stride + 1) or "uniform" (`num_clips`
            evenly spaced clips from the first to the last valid start).
        num_clips: clips per video. With "uniform" or `num_clips > 1` the output
            has a leading clip axis [num_clips, T, H, W, 3]; otherwise it is
            [T, H, W, 3]. "center" gives one clip.
        short_video: for videos shorter than a clip's span: "loop" (indices wrap
            around), "repeat_last", "pad" (black frames after the end) or "error".
        crop_size: optional (h, w) box, one per clip, shared by its frames.
        crop: "random" or "center" placement of the box.
        flip: if True, each clip is flipped left-right with probability 1/2.
        seed: optional int. With a seed the clip is a function of (seed, video
            content); without one every read draws fresh randomness.
        short_side: optional int: frames are resized so that their shorter side
            is this many pixels, before any crop.
    """

    num_frames: int
    _: dataclasses.KW_ONLY
    stride: int | tuple[int, int] = 1
    mode: str = "random"
    num_clips: int = 1
    short_video: str = "loop"
    crop_size: tuple[int, int] | None = None
    crop: str = "random"
    flip: bool = False
    seed: int | None = None
    short_side: int | None = None

    def __post_init__(self):
        checked = {
            "num_frames": check_positive_int("num_frames", self.num_frames),
            "stride": _check_stride(self.stride),
            "mode": _check_choice("mode", self.mode, MODES),
            "num_clips": check_positive_int("num_clips", self.num_clips),
            "short_video": _check_choice("short_video", self.short_video, SHORT_VIDEO_POLICIES),
            "crop_size": _check_crop_size(self.crop_size),
            "crop": _check_choice("crop", self.crop, CROP_MODES),
        }
        if checked["mode"] == "center" and checked["num_clips"] != 1:
            raise ValueError(
                "mode='center' gives a single clip; use num_clips=1 or "
                "mode='uniform' for several evenly spaced clips."
            )
        if not isinstance(self.flip, (bool, np.bool_)):
            raise ValueError(f"flip must be a bool, got {self.flip!r}.")  # noqa: TRY004
        checked["flip"] = bool(self.flip)
        if self.seed is not None and not is_int(self.seed):
            raise ValueError(f"seed must be None or an int, got {self.seed!r}.")
        checked["seed"] = None if self.seed is None else int(self.seed)
        if self.short_side is not None:
            checked["short_side"] = check_positive_int("short_side", self.short_side)
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def multi_clip(self) -> bool:
        """Whether the output has a leading clip axis."""
        return self.mode == "uniform" or self.num_clips > 1

    @property
    def min_stride(self) -> int:
        """The smallest frame step a clip can take."""
        return self.stride if isinstance(self.stride, int) else self.stride[0]

    @property
    def min_span(self) -> int:
        """Frames covered by a clip with the smallest stride."""
        return (self.num_frames - 1) * self.min_stride + 1
