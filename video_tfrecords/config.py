"""The builder's configuration: how frames are chosen, sized and encoded."""

from __future__ import annotations

import dataclasses

import tensorflow_datasets as tfds

from video_tfrecords.video_io import EncodeOptions


@dataclasses.dataclass(eq=False)
class VideoConfig(tfds.core.BuilderConfig):
    """Options of one stored variant of the dataset.

    Select one by name (`video_tfrecords/native`), as JSON from the CLI
    (`--config '{"name": "fps10", "fps": 10}'`), or in Python through
    `builder_kwargs={"config": VideoConfig(name=..., ...)}`.

    Attributes:
      short_side: resize so the shorter side is this many pixels, keeping the
        aspect ratio. Frames already smaller are kept as they are unless
        `upscale`. None keeps the native size.
      size: (height, width) to resize every frame to, ignoring the aspect ratio.
        Overrides `short_side`.
      upscale: with `short_side`, also enlarge frames smaller than it.
      fps: keep frames at this rate, chosen by the frames' timestamps (so
        variable-frame-rate videos work). None keeps every frame.
      max_frames: keep only the first this many (selected) frames.
      num_frames: keep this many frames evenly spaced over the whole video,
        first and last included (shorter videos keep all their frames).
      jpeg_quality: JPEG quality, 1-100, of the stored frames.
      strict: stop the build at the first bad video instead of skipping it.
      segment_frames: store videos longer than this many frames as several
        examples of at most this many frames (`segment`, `start_frame` tell
        which part). None stores each video as one example.
      num_workers: processes that decode and encode videos in parallel during
        a local build (0 = one per CPU core, 1 = in the build process).
    """

    short_side: int | None = 256
    size: tuple[int, int] | None = None
    upscale: bool = False
    fps: float | None = None
    max_frames: int | None = None
    num_frames: int | None = None
    jpeg_quality: int = 90
    strict: bool = False
    segment_frames: int | None = None
    num_workers: int = 0

    def __post_init__(self):
        if self.size is not None:
            self.size = tuple(self.size)  # JSON gives lists
        problems = _problems(self)
        if problems:
            raise ValueError(f"VideoConfig {self.name!r}: " + "; ".join(problems))
        if self.version is None:
            self.version = "1.0.0"

    def encode_options(self) -> EncodeOptions:
        return EncodeOptions(
            short_side=self.short_side,
            size=self.size,
            upscale=self.upscale,
            fps=self.fps,
            max_frames=self.max_frames,
            num_frames=self.num_frames,
            jpeg_quality=self.jpeg_quality,
        )


def _positive(value) -> bool:
    return value is None or value > 0


def _problems(config: VideoConfig) -> list[str]:
    """Everything wrong with the config's fields, in words."""
    problems = []
    for field in ("short_side", "fps", "max_frames", "num_frames", "segment_frames"):
        if not _positive(getattr(config, field)):
            problems.append(f"{field} must be positive, got {getattr(config, field)}")
    if config.size is not None and (len(config.size) != 2 or min(config.size) <= 0):
        problems.append(f"size must be (height, width) > 0, got {config.size}")
    if not 1 <= config.jpeg_quality <= 100:
        problems.append(f"jpeg_quality must be in 1..100, got {config.jpeg_quality}")
    if config.fps is not None and config.num_frames is not None:
        problems.append("choose one of fps and num_frames")
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
