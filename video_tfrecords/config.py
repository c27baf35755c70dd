"""The builder's configuration: how frames are chosen, sized and encoded, and how the build runs."""

from __future__ import annotations

import dataclasses

import tensorflow_datasets as tfds

# The dataset's version (the builder's VERSION); a config without one gets it.
DATASET_VERSION = "2.2.0"
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
)


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
      strict: stop the build at the first bad or damaged video instead of
        skipping it (or keeping it with a note).
      num_workers: processes that decode and encode videos in parallel during
        a local build (0 = one per CPU core, 1 = in the build process).
      keep_cache: keep the cache of encoded videos after a successful build
        (it is what lets a killed build resume; it is removed by default).
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
    strict: bool = False
    num_workers: int = 0
    keep_cache: bool = False

    def __post_init__(self):
        if self.size is not None:
            self.size = tuple(self.size)  # JSON gives lists
        problems = _problems(self)
        if problems:
            raise ValueError(f"VideoConfig {self.name!r}: " + "; ".join(problems))
        if self.version is None:
            self.version = DATASET_VERSION

    def frame_fields(self) -> dict:
        """The fields that decide the stored frames (the cache key's part of the config)."""
        return {field: getattr(self, field) for field in FRAME_FIELDS}


def _problems(config: VideoConfig) -> list[str]:
    """Everything wrong with the config's fields, in words."""
    problems = [
        f"{field} must be positive, got {getattr(config, field)}"
        for field in ("short_side", "fps", "max_frames", "num_frames", "segment_frames")
        if getattr(config, field) is not None and getattr(config, field) <= 0
    ]
    if config.size is not None and (len(config.size) != 2 or min(config.size) <= 0):
        problems.append(f"size must be (height, width) > 0, got {config.size}")
    if not 1 <= config.jpeg_quality <= 100:
        problems.append(f"jpeg_quality must be in 1..100, got {config.jpeg_quality}")
    if config.fps is not None and config.num_frames is not None:
        problems.append("choose one of fps and num_frames")
    if config.deinterlace is not False and config.deinterlace != "auto":
        problems.append(f'deinterlace must be "auto" or False, got {config.deinterlace!r}')
    if config.num_workers < 0:
        problems.append(f"num_workers must be >= 0, got {config.num_workers}")
    return problems


DEFAULT = VideoConfig(
    name="default",
    description="Every frame; short side brought down to 256 px (Kinetics convention); JPEG q90.",
)
NATIVE = VideoConfig(
    name="native",
    short_side=None,
    description="Every frame at its native resolution; JPEG q90.",
)
