"""The builder's configuration: how frames are chosen, sized and encoded, and how the build runs."""

from __future__ import annotations

import dataclasses
import difflib
import inspect

import tensorflow_datasets as tfds

from video_tfrecords.clips.jpeg import MAX_PIXELS
from video_tfrecords.clips.plan import MAX_FRAMES
from video_tfrecords.records.schema import DATASET_VERSION
from video_tfrecords.util.numbers import is_finite_number, is_int

# Fields that decide the stored frames: a change of any of them makes a new cache entry.
FRAME_FIELDS = (
    "short_side",
    "size",
    "upscale",
    "coded_aspect",
    "fps",
    "max_frames",
    "num_frames",
    "jpeg_quality",
    "segment_frames",
    "deinterlace",
    "audio_rate",
    "audio_channels",
)


# Fields that say how a build runs, not what it stores: a built-in config takes them under its
# own name (`with_build_settings`), and a rebuild that changes only them is up to date.
RUN_FIELDS = ("num_workers", "keep_cache")


class ConfigError(ValueError):
    """A `VideoConfig` field that does not exist or holds a value it cannot take."""


@dataclasses.dataclass(eq=False)
class VideoConfig(tfds.core.BuilderConfig):
    """Options of one stored variant of the dataset.

    Select one by name (`video_tfrecords/native`), as JSON from the CLI
    (`--config '{"name": "fps10", "fps": 10}'`), or in Python through
    `builder_kwargs={"config": VideoConfig(name=..., ...)}`.

    Attributes:
      short_side: resize so the shorter side is this many pixels, keeping the
        display aspect ratio. Frames already smaller are kept as they are
        unless `upscale`. None keeps the native size.
      size: (height, width) to resize every frame to, ignoring the aspect ratio.
        Overrides `short_side`.
      upscale: with `short_side`, also enlarge frames smaller than it.
      coded_aspect: keep the coded pixel grid's aspect ratio instead of the
        display aspect (which applies the sample aspect ratio, as players do).
      fps: resample to this constant rate by the frames' timestamps (the
        frame on screen at each 1/fps tick). None keeps every frame.
      max_frames: keep only the first this many (selected) frames.
      num_frames: keep this many frames evenly spaced over the whole video,
        first and last included (shorter videos keep all their frames).
      jpeg_quality: JPEG quality, 1-100, of the stored frames.
      segment_frames: store videos longer than this many frames as several
        examples of at most this many frames (`segment`, `start_frame` tell
        which part), so that no example outgrows memory. None stores each
        video as one example.
      deinterlace: "auto" runs FFmpeg's bwdif on the frames FFmpeg flags
        interlaced (broadcast, DV, DVD), before any resize; False stores
        interlaced frames woven, as decoded. Times and frame count unchanged.
      audio_rate: store the video's default audio stream (FFmpeg's pick) as int16
        PCM at this many samples per second, resampled by FFmpeg and aligned to the
        stored frames (sample j of an example plays at (round(timestamps[0] * rate) + j)
        / rate s, on the `timestamps` clock);
        `has_audio` says whether the video had any. None (the default) stores none.
      audio_channels: 1 (mono, downmixed by FFmpeg) or 2 (stereo), with `audio_rate`.
      strict: stop the build at the first bad or damaged video instead of
        skipping it (or keeping it with a note).
      num_workers: processes that decode and encode videos in parallel during
        a local build (0 = one per CPU core, 1 = in the build process).
      keep_cache: keep the cache of encoded videos after a successful build (what
        lets a killed build resume, and an --overwrite rebuild encode only new and
        changed videos; about the dataset's size again). False removes it.
    """

    short_side: int | None = 256
    size: tuple[int, int] | None = None
    upscale: bool = False
    coded_aspect: bool = False
    fps: float | None = None
    max_frames: int | None = None
    num_frames: int | None = None
    jpeg_quality: int = 90
    segment_frames: int | None = 1000
    deinterlace: str | bool = "auto"
    audio_rate: int | None = None
    audio_channels: int = 1
    strict: bool = False
    num_workers: int = 0
    keep_cache: bool = True

    def __new__(cls, *args, **fields):
        """Refuses an unknown field by name, with the nearest valid one (a typo's fix)."""
        unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ConfigError(_unknown_fields(cls, unknown))
        return super().__new__(cls)

    def __post_init__(self):
        problems = _problems(self)
        if problems:
            raise ConfigError(f"VideoConfig {self.name!r}: " + "; ".join(problems))
        if self.size is not None:
            self.size = tuple(int(s) for s in self.size)  # JSON gives lists
        if self.version is None:
            self.version = DATASET_VERSION

    def frame_fields(self) -> dict:
        """The fields that decide the stored frames (the cache key's part of the config)."""
        return {field: getattr(self, field) for field in FRAME_FIELDS}


# `__new__` takes (*args, **fields) to name an unknown field; `help()` and editors show the
# dataclass's own fields instead.
VideoConfig.__signature__ = inspect.signature(VideoConfig.__init__).replace(
    parameters=list(inspect.signature(VideoConfig.__init__).parameters.values())[1:]
)


def _is_size(value) -> bool:
    return (
        isinstance(value, (tuple, list)) and len(value) == 2
        and all(_positive_int(v) for v in value) and value[0] * value[1] <= MAX_PIXELS
    )


def _positive_int(value) -> bool:
    return is_int(value) and value > 0


def _bool(value) -> bool:
    return isinstance(value, bool)


def _or_none(check):
    return lambda value: value is None or check(value)


# Field -> (what it takes, in words; whether a value is that).
_RULES = {
    "short_side": ("a positive int or None", _or_none(_positive_int)),
    "size": (
        f"(height, width), two positive ints of at most {MAX_PIXELS} pixels, or None",
        _or_none(_is_size),
    ),
    "upscale": ("true or false", _bool),
    "coded_aspect": ("true or false", _bool),
    "fps": ("a positive number or None", _or_none(lambda v: is_finite_number(v) and v > 0)),
    "max_frames": ("a positive int or None", _or_none(_positive_int)),
    "num_frames": ("a positive int or None", _or_none(_positive_int)),
    "jpeg_quality": ("an int from 1 to 100", lambda v: is_int(v) and 1 <= v <= 100),
    "segment_frames": (
        f"a positive int or None (at most {MAX_FRAMES}: what readers take)",
        _or_none(lambda v: _positive_int(v) and v <= MAX_FRAMES),
    ),
    "strict": ("true or false", _bool),
    "num_workers": ("an int >= 0 (0: one per core)", lambda v: is_int(v) and v >= 0),
    "keep_cache": ("true or false", _bool),
    "deinterlace": ('"auto" or False', lambda v: v is False or v == "auto"),
    "audio_rate": ("a positive int (samples per second) or None", _or_none(_positive_int)),
    "audio_channels": ("1 (mono) or 2 (stereo)", lambda v: is_int(v) and v in (1, 2)),
}


def _problems(config: VideoConfig) -> list[str]:
    """Everything wrong with the config's fields, in words: each field and what it takes."""
    problems = [
        f"{field} must be {takes}, got {getattr(config, field)!r}"
        for field, (takes, ok) in _RULES.items()
        if not ok(getattr(config, field))
    ]
    if config.fps is not None and config.num_frames is not None:
        problems.append("choose one of fps and num_frames")
    if config.audio_rate is None and config.audio_channels != 1:
        problems.append("audio_channels needs audio_rate (the samples per second to store)")
    return problems


def _unknown_fields(cls, unknown: list[str]) -> str:
    """Names the unknown fields, the nearest valid name of each, and every valid field."""
    valid = [f.name for f in dataclasses.fields(cls)]
    parts = []
    for name in unknown:
        near = difflib.get_close_matches(name, valid, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return (
        f"VideoConfig has no field {', '.join(parts)}. Valid fields: {', '.join(valid)}."
    )


DEFAULT = VideoConfig(
    name="default",
    description="Every frame; short side brought down to 256 px (Kinetics convention); JPEG q90.",
)
NATIVE = VideoConfig(
    name="native",
    short_side=None,
    description="Every frame at its native resolution; JPEG q90.",
)


def with_build_settings(config, builtins) -> tuple:
    """(the config a builder is made with, the `RUN_FIELDS` to build it with): a `VideoConfig`
    named like one of `builtins` that differs from it only in `RUN_FIELDS` (JSON such as
    `{"name": "default", "num_workers": 2}`) is that built-in config, built with those
    settings; one that differs in what is stored needs a name of its own (TFDS would refuse
    it in words that do not say why)."""
    builtin = next((c for c in builtins if c.name == getattr(config, "name", None)), None)
    if builtin is None or builtin is config or not isinstance(config, VideoConfig):
        return config, {}
    own = [f.name for f in dataclasses.fields(VideoConfig)]
    own = [name for name in own if name not in {f.name for f in dataclasses.fields(
        tfds.core.BuilderConfig)}]  # fmt: skip
    changed = [
        f"{name} {getattr(builtin, name)!r} -> {getattr(config, name)!r}"
        for name in own
        if name not in RUN_FIELDS and getattr(config, name) != getattr(builtin, name)
    ]
    if changed:
        raise ConfigError(
            f"{config.name!r} is a built-in config, and yours stores other frames "
            f"({'; '.join(changed)}): give it a name of its own, e.g. "
            f'{{"name": "{config.name}_mine", ...}}. Only how a build runs '
            f"({', '.join(RUN_FIELDS)}) may be set under a built-in config's name."
        )
    return builtin.name, {name: getattr(config, name) for name in RUN_FIELDS}
