"""`ClipSpec`: what clip to take from a video, validated once.

`ClipDecoder`, `clip_dataset` and `ClipSource` take the same arguments and
keep them in one `ClipSpec`, so the rules (and the error messages) live here
only. Imports neither TensorFlow nor TFDS.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from video_tfrecords.clips import geometry
from video_tfrecords.clips.backends import NP_OPS
from video_tfrecords.util.numbers import is_finite_number, is_int  # also this module's names

__all__ = ["ClipSpec", "check_non_negative_int", "check_positive_int", "is_finite_number", "is_int"]

MODES = ("random", "center", "uniform", "segments", "segment_centers")
SEGMENT_MODES = ("segments", "segment_centers")
SHORT_VIDEO_POLICIES = ("loop", "repeat_last", "pad", "error")
CROP_MODES = ("random", "center", "resized")


def check_positive_int(name: str, value) -> int:
    """`value` as an int, or a ValueError naming the argument."""
    if not is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return int(value)


def check_non_negative_int(name: str, value) -> int:
    """`value` as an int, or a ValueError naming the argument."""
    if not is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}.")
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


def _check_short_side(short_side) -> int | tuple[int, int] | None:
    """None, a positive int, or an inclusive (min, max) range (a one-value range becomes an int)."""
    if short_side is None or is_int(short_side):
        return None if short_side is None else check_positive_int("short_side", short_side)
    pair = isinstance(short_side, (tuple, list)) and len(short_side) == 2
    if pair and all(map(is_int, short_side)) and 0 < short_side[0] <= short_side[1]:
        lo, hi = int(short_side[0]), int(short_side[1])
        return (lo, hi) if lo < hi else lo
    raise ValueError(
        "short_side must be None, a positive int or a (min, max) tuple of ints with "
        f"0 < min <= max, got {short_side!r}."
    )


def _check_range(name: str, value, top: float | None = None) -> tuple[float, float]:
    """Two finite numbers 0 < lo <= hi (<= top), as floats, else a ValueError naming `name`."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = value
        if all(map(is_finite_number, value)) and 0 < lo <= hi and (top is None or hi <= top):
            return float(lo), float(hi)
    bound = "" if top is None else f" <= {top}"
    raise ValueError(
        f"{name} must be a (min, max) range with 0 < min <= max{bound}, got {value!r}."
    )


def _check_fps(fps) -> float | None:
    """None, or a positive finite number of ticks per second."""
    if fps is None:
        return None
    if is_finite_number(fps) and fps > 0:
        return float(fps)
    raise ValueError(f"fps must be None or a positive number of frames per second, got {fps!r}.")


def _check_audio(audio, mode: str, stride) -> bool:
    """A bool; with audio, a clip that spans one stretch of time of one length."""
    if not isinstance(audio, (bool, np.bool_)):
        raise ValueError(f"audio must be a bool, got {audio!r}.")  # noqa: TRY004
    if audio and mode in SEGMENT_MODES:
        raise ValueError(
            f"audio=True needs a contiguous clip, but mode={mode!r} samples scattered frames "
            "(one per segment): use mode='random', 'center' or 'uniform'."
        )
    if audio and not isinstance(stride, int):
        raise ValueError(
            f"audio=True needs one stride (its window is num_frames * stride frame periods, "
            f"the same for every clip, so that batches stack), got stride={stride!r}."
        )
    return bool(audio)


@dataclasses.dataclass(frozen=True)
class ClipSpec:
    """Which clip(s) to take from a video of JPEG frames, and how to crop, flip and resize them.

    Args:
        num_frames: frames per clip (T).
        stride: step between frames, or an inclusive (min, max) range from which
            each clip draws its step (frame-rate jitter), capped so that the clip
            fits in the video when possible.
        mode: "random" (start uniform over all valid starts), "center" (start
            (L - span) // 2, span = (T - 1) * stride + 1), "uniform" (`num_clips`
            evenly spaced clips from the first to the last valid start),
            "segments" (T equal segments [k L // T, (k + 1) L // T), one frame
            at a random offset in each: TSN training) or "segment_centers"
            (frame int(a k + a / 2), a = L / T: TSN test; MMAction2's
            SampleFrames with clip_len=1). Segments ignore `stride`.
        num_clips: clips per video. With "uniform" or `num_clips > 1` the output
            has a leading clip axis [num_clips, T, H, W, 3]; otherwise it is
            [T, H, W, 3]. "center" gives one clip.
        short_video: for videos shorter than a clip's span: "loop" (indices wrap
            around), "repeat_last", "pad" (black frames after the end) or "error".
        crop_size: optional (h, w) box, one per clip, shared by its frames.
        crop: "random" or "center" placement of the box, or "resized": a box
            of random area and aspect (torchvision's RandomResizedCrop: up to
            10 tries of an area fraction uniform in `crop_area` and a
            log-aspect uniform in log(`crop_aspect`), else the centred
            fallback), resized to `crop_size` (bilinear; area averaging when
            the box is at least twice `crop_size` on both sides).
        crop_area: (min, max) fraction of the frame's area, for crop="resized".
        crop_aspect: (min, max) width / height, for crop="resized".
        flip: if True, each view (a clip, or each of its crops) is flipped left-right
            with probability 1/2.
        seed: optional int. With a seed the clip is a function of (seed, video
            content); without one every read draws fresh randomness.
        short_side: optional int: frames are resized so that their shorter side
            is this many pixels, before any crop; or an inclusive (min, max)
            range from which each clip draws its short side (scale jitter,
            uniform over the integers; needs `crop_size`).
        fps: optional rate (> 0): frames are taken on a grid of 1/fps seconds
            over the video's timestamps (the frame on screen at each tick, i.e.
            the last one whose timestamp is <= the tick, within 0.1 ms), and
            L, `stride` and the segments count ticks, not stored frames.
            Without stored timestamps the stored fps is used.
        num_crops: boxes per clip (test views, with `crop_size`): 1, or n
            boxes centred on the short side and evenly placed along the long
            side at ceil(i (W - w) / (n - 1)) (3: left/top, centre, right/bottom
            as PySlowFast's spatial index 0/1/2). The output then has
            num_clips * num_crops views, clip-major: view v is clip
            v // num_crops with crop v % num_crops.
        audio: also cut each view's audio (a dataset built with `audio_rate`):
            float32 in [-1, 1], [S, channels] (or [num_views, S, channels]),
            from the first sampled frame's stored timestamp, num_frames *
            stride frame periods long (of `fps`, else of the stored frame rate):
            S = round(num_frames * stride * audio_rate / fps); silence past the
            end of the video (`short_video` loops or pads the frames only).
            Needs a contiguous clip: one stride, not a segment mode.
        labels: on datasets built with several labels (JSON Lines `labels` or
            `segments`), the clip's "labels" is a float32 multi-hot vector
            ([num_views, classes] with views): "video", every label of the
            example; "clip", those whose segments overlap the clip's time span
            and those given without a segment (PyTorchVideo's Charades protocol).
        captions: on datasets built with captions: "random", one per view drawn
            with the clip's key (seeded: the same on every reader), among those
            overlapping the clip (timed ones) or all (untimed); "all", every such
            caption. None: "random" for modes "random" and "segments", else "all".
        segment: on datasets built with label segments: sample each clip within
            one of the example's segments, drawn with the clip's key (the whole
            example when it has none, or its segment holds no frame). No audio.
            On a dataset that stores no labels (or captions), labels="clip" and
            segment=True (or captions=) raise a ValueError rather than doing nothing.
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
    short_side: int | tuple[int, int] | None = None
    fps: float | None = None
    num_crops: int = 1
    crop_area: tuple[float, float] = (0.08, 1.0)
    crop_aspect: tuple[float, float] = (3 / 4, 4 / 3)
    audio: bool = False
    labels: str = "video"
    captions: str | None = None
    segment: bool = False

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
        if checked["mode"] in ("center", "segment_centers") and checked["num_clips"] != 1:
            raise ValueError(
                f"mode={checked['mode']!r} gives a single clip; use num_clips=1 or "
                "mode='uniform' for several evenly spaced clips."
            )
        if checked["mode"] in SEGMENT_MODES and checked["stride"] != 1:
            raise ValueError(
                f"stride has no meaning with mode={checked['mode']!r} (one frame per "
                f"segment); got stride={self.stride!r}."
            )
        checked["crop_area"] = _check_range("crop_area", self.crop_area, 1.0)
        checked["crop_aspect"] = _check_range("crop_aspect", self.crop_aspect)
        if checked["crop"] == "resized" and checked["crop_size"] is None:
            raise ValueError(
                "crop='resized' needs crop_size=(h, w): the size the boxes are resized to."
            )
        if checked["crop"] == "resized" and self.num_crops != 1:
            raise ValueError("num_crops must be 1 with crop='resized' (one drawn box per clip).")
        checked["fps"] = _check_fps(self.fps)
        checked["num_crops"] = check_positive_int("num_crops", self.num_crops)
        if checked["num_crops"] > 1 and checked["crop_size"] is None:
            raise ValueError(
                f"num_crops={checked['num_crops']} needs crop_size=(h, w): the boxes to place."
            )
        if not isinstance(self.flip, (bool, np.bool_)):
            raise ValueError(f"flip must be a bool, got {self.flip!r}.")  # noqa: TRY004
        checked["flip"] = bool(self.flip)
        if self.seed is not None and not is_int(self.seed):
            raise ValueError(f"seed must be None or an int, got {self.seed!r}.")
        checked["seed"] = None if self.seed is None else int(self.seed)
        checked["short_side"] = _check_short_side(self.short_side)
        if isinstance(checked["short_side"], tuple) and checked["crop_size"] is None:
            raise ValueError(
                f"short_side={checked['short_side']} (scale jitter) needs crop_size=(h, w): "
                "clips of different sizes cannot be stacked."
            )
        checked["audio"] = _check_audio(self.audio, checked["mode"], checked["stride"])
        checked["labels"] = _check_choice("labels", self.labels, ("video", "clip"))
        if not isinstance(self.segment, (bool, np.bool_)):
            raise ValueError(f"segment must be a bool, got {self.segment!r}.")  # noqa: TRY004
        if self.segment and checked["audio"]:
            raise ValueError("segment=True cuts no audio: use one of segment and audio.")
        checked["segment"] = bool(self.segment)
        if self.captions is not None:
            checked["captions"] = _check_choice("captions", self.captions, ("random", "all"))
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_arguments(cls, arguments: dict) -> ClipSpec:
        """The spec of an entry point's clip arguments (its `locals()`): they are spelled out
        in each signature, for editors and `help()`, with this class's defaults."""
        return cls(**{field.name: arguments[field.name] for field in dataclasses.fields(cls)})

    @property
    def multi_clip(self) -> bool:
        """Whether the output has a leading clip (view) axis."""
        return self.mode == "uniform" or self.num_clips > 1 or self.num_crops > 1

    @property
    def num_views(self) -> int:
        """Clips times crops: the length of the leading axis of a multi-clip output."""
        return self.num_clips * self.num_crops

    def output_shape(self, frame_size=(None, None)) -> list[int | None]:
        """Static output shape for stored frames of `frame_size` (h, w; None = unknown)."""
        if self.crop_size is not None:
            size = list(self.crop_size)
        elif None not in tuple(frame_size):
            size = [int(s) for s in frame_size]
            if self.short_side is not None:
                resized = geometry.resized_size(NP_OPS, *size, self.short_side)
                size = [int(s) for s in resized]
        else:
            size = [None, None]
        clip = [self.num_frames, *size, 3]
        return [self.num_views, *clip] if self.multi_clip else clip

    @property
    def min_stride(self) -> int:
        """The smallest frame step a clip can take."""
        return self.stride if isinstance(self.stride, int) else self.stride[0]

    @property
    def min_span(self) -> int:
        """Frames (ticks with `fps`) covered by a clip with the smallest stride."""
        if self.mode in SEGMENT_MODES:
            return self.num_frames
        return (self.num_frames - 1) * self.min_stride + 1
