"""The examples of one span of a video (all of it, or a manifest line's `start`/`end`), made
from its frames as one decode of the video pushes them, in time order.

`SpanWriter` picks the frames to keep (`frame_choice.Choice`), JPEG-encodes them one at a
time (a frame shared by overlapping spans, or repeated by resampling, once: `Jpegs`),
cuts them into examples of at most `segment_frames` and hands each out as it is made, with
its audio (`audio_io.AudioTrack`, opened at the span's first stored frame). Memory holds one
example's JPEG bytes and audio, never a span's raw frames.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable

import cv2
import numpy as np
from awscrt import checksums

from video_tfrecords.clips.plan import MAX_FRAMES
from video_tfrecords.config import VideoConfig
from video_tfrecords.ingest import audio_io, video_io
from video_tfrecords.ingest.frame_choice import Choice, frame_rate
from video_tfrecords.records import schema
from video_tfrecords.util.text import human_bytes

# Protobuf refuses messages over 2 GiB; stay well clear of it.
MAX_EXAMPLE_BYTES = 1 << 30


def encode_jpeg(frame_bgr: np.ndarray, quality: int) -> bytes:
    """JPEG-encodes a BGR frame (the file stores RGB, as every decoder expects)."""
    ok, buffer = cv2.imencode(".jpg", frame_bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise video_io.VideoError(f"JPEG encoding failed for a frame of shape {frame_bgr.shape}")
    return buffer.tobytes()


class Jpegs:
    """Each frame's JPEG at the stored size, encoded once for the last few frames asked for."""

    def __init__(self, size: tuple[int, int], quality: int, remembered: int = 4):
        self.size, self.quality, self._remembered = size, quality, remembered
        self._recent: list[tuple[video_io.Frame, bytes]] = []

    def of(self, frame: video_io.Frame) -> bytes:
        for known, jpeg in self._recent:
            if known is frame:
                return jpeg
        jpeg = encode_jpeg(frame.bgr(*self.size), self.quality)
        self._recent = [*self._recent[1 - self._remembered :], (frame, jpeg)]
        return jpeg


@dataclasses.dataclass
class Piece:
    """The frames of one example as they are encoded, held to the size limit as they grow."""

    start: int = 0  # its first frame's index in the video (`start_frame`)
    frames: list[bytes] = dataclasses.field(default_factory=list)
    times: list[float] = dataclasses.field(default_factory=list)
    crcs: list[int] = dataclasses.field(default_factory=list)
    size: int = 0
    audio: np.ndarray | None = None  # int16 [samples, channels], with `audio_rate`

    def add(self, jpeg: bytes, time: float) -> None:
        self.frames.append(jpeg)
        self.times.append(time)
        # Lets a reader check only the frames it decodes (the record's CRC covers all of them).
        self.crcs.append(checksums.crc32c(jpeg))
        self._grow(len(jpeg))
        if len(self.frames) > MAX_FRAMES:  # what a reader refuses
            raise video_io.VideoError(f"an example would hold more than {MAX_FRAMES} frames: "
                                      "set segment_frames to store it as several examples")

    def set_audio(self, audio: np.ndarray) -> None:
        self.audio = audio
        self._grow(audio.nbytes)

    def _grow(self, size: int) -> None:
        """Counts bytes into the example, refusing it past MAX_EXAMPLE_BYTES."""
        self.size += size
        if self.size > MAX_EXAMPLE_BYTES:
            raise video_io.VideoError(
                f"an example's frames and audio would go over the {human_bytes(MAX_EXAMPLE_BYTES)} "
                "limit (protobuf's hard limit is 2 GiB): set segment_frames to store it as "
                "several examples"
            )

    def example(self) -> dict:
        """The piece's own fields; the video's shared fields are added when it is read."""
        example = {
            schema.VIDEO: self.frames,
            schema.FRAME_CHECKSUMS: np.asarray(self.crcs, np.uint32),
            schema.TIMESTAMPS: np.asarray(self.times, np.float32),
            schema.START_FRAME: self.start,
        }
        if self.audio is not None:  # from this piece's first frame to the next one's
            example[schema.AUDIO] = self.audio
        return example


class SpanWriter:
    """The examples of the frames timed from `start` up to `end` (seconds on the video's
    clock), pushed in order; each example goes to `add` with `part` (which span) and
    `segment` (which example of the span) as soon as it is whole."""

    def __init__(
        self, part: int, start: float, end: float, config: VideoConfig, jpegs: Jpegs,
        add: Callable[[dict], None], count_frames: Callable[[], int],
        open_audio: Callable[[], audio_io.AudioTrack] | None = None,
    ):  # fmt: skip
        self.part, self.start, self.end = part, start, end
        self._config, self._jpegs, self._add = config, jpegs, add
        self._choice = Choice(config, count_frames)
        self._open_audio, self.audio = open_audio, None
        self._limit = config.segment_frames or math.inf
        self.decoded: list[float] = []  # the span's decoded frames' times
        # The video's frames before the first pushed to it (whose `index` counts from there).
        self.frames_before = 0
        self._piece, self._full, self._made = Piece(), None, 0
        self._times: list[float] = []  # the stored frames' times
        self._last: video_io.Frame | None = None  # the last stored frame

    def covers(self, time: float) -> bool:
        return self.start - video_io.EPSILON <= time < self.end - video_io.EPSILON

    def push(self, frame: video_io.Frame) -> None:
        """Takes one frame of the span (in time order)."""
        self.decoded.append(frame.time)
        for time, chosen in self._choice.push(frame):
            self._store(time, chosen)

    def finish(self, nominal_fps: float, whole: bool) -> dict | None:
        """Hands out the last examples; the span's own fields (None: it had no frame).
        `whole`: the span is the whole video, whose audio damage is then of the whole stream."""
        for time, chosen in self._choice.finish():
            self._store(time, chosen)
        if not self._times:
            self.close()
            return None
        end = span_end(self._config, self._times[-1], self._last.time, self.decoded, nominal_fps)
        for done in (self._full, self._piece):
            if done is not None and done.frames:
                self._hand_out(done, min(end, self.end))
        if self.audio is not None and whole:
            self.audio.read_to_end()  # its damage is of the whole stream
        return {
            schema.FPS: float(self._config.fps or frame_rate(self._times, nominal_fps)),
            schema.SOURCE_NUM_FRAMES: len(self.decoded),
            schema.SPAN_START: self.start,
            schema.SPAN_END: min(
                self.end, self.decoded[-1] + _last_period(self.decoded, nominal_fps)
            ),
        }

    def close(self) -> None:
        if self.audio is not None:
            self.audio.close()

    def _store(self, time: float, frame: video_io.Frame) -> None:
        if self._full is not None:
            self._hand_out(self._full, time)
            self._full = None
        if self.audio is None and self._open_audio is not None:  # from the first stored frame
            self.audio = self._open_audio()
            self.audio.start_at(audio_io.sample_at(time, self.audio.rate))
        if not self._piece.frames:
            self._piece.start = self.frames_before + frame.index
        self._piece.add(self._jpegs.of(frame), time)
        self._times.append(time)
        self._last = frame
        if len(self._piece.frames) == self._limit:
            self._full, self._piece = self._piece, Piece()

    def _hand_out(self, done: Piece, end: float) -> None:
        """One example, its audio running to `end` (the next example's first frame's time)."""
        if self.audio is not None:
            done.set_audio(self.audio.take(audio_io.sample_at(end, self.audio.rate)))
        self._add({**done.example(), "part": self.part, schema.SEGMENT: self._made})
        self._made += 1


def span_end(config: VideoConfig, last_time: float, last_source: float, decoded, fps) -> float:
    """When the stored frames stop showing: one tick after the last with `fps`; else when the
    source frame after the last stored one (timed `last_source`) shows, or for the span's last
    frame its time plus the gap before it (a frame period; 1 / `fps`, the stream's rate, for a
    one-frame span)."""
    if config.fps is not None:
        return last_time + 1.0 / config.fps
    index = bisect.bisect_left(decoded, last_source - video_io.EPSILON)
    if index + 1 < len(decoded):
        return last_time + decoded[index + 1] - decoded[index]
    return last_time + _last_period(decoded[: index + 1], fps)


def _last_period(decoded: list[float], fps: float) -> float:
    """How long the last of the frames timed `decoded` shows: the gap before it (1 / `fps`
    for one frame)."""
    return decoded[-1] - decoded[-2] if len(decoded) > 1 else 1.0 / fps
