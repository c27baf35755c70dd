"""A video file's default audio stream, decoded and resampled by FFmpeg, on the frames' clock.

The stored audio is int16 PCM at the config's rate and channels, and sample i plays at
i / rate seconds on the clock of the stored `timestamps`: 0 is the video's first frame. FFmpeg
(through PyAV) decodes the stream FFmpeg picks (`av_find_best_stream`) and resamples it
(`av.AudioResampler`: swresample, downmixing or upmixing to the layout); each resampled frame
goes where its own time says: its pts in its time base, minus the first video frame's time on
the container's clock (streams start at different times). So audio that starts after the
video, codec priming (an AAC stream's first 1,024 samples, which FFmpeg drops and times), edit
lists, and audio that ends early all land where a player plays them: before 0 or past the end
trimmed, holes filled with silence.

`AudioTrack` decodes as the frames are stored, in a demux of its own over the file's audio
packets (the video's demux reads only the video stream), and hands out a piece's samples at a
time: memory holds a piece's audio and one decoded frame beyond it. A span of the video
(`start_at`) seeks the audio to it too. Damage (packets FFmpeg
rejects, audio lost mid-stream, an audio stream FFmpeg cannot decode) keeps the video, silent
where the audio was lost, and is described by `AudioDamage.note`. Imports neither TensorFlow
nor TFDS.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
from collections.abc import Iterator
from typing import Self

import av
import numpy as np

from video_tfrecords.ingest import demux
from video_tfrecords.util.text import plural

__all__ = ["AudioDamage", "AudioTrack", "sample_at"]

_LAYOUTS = {1: "mono", 2: "stereo"}
# Seconds a second seek aims before a first one that landed late, beyond how late it was.
RETREAT = 0.5


def sample_at(seconds: float, rate: int) -> int:
    """The sample that plays at `seconds` (a stored timestamp: its float32 value, as a reader
    sees it), rounded to the nearest: the grid both the build and the readers cut audio on."""
    return int(np.floor(float(np.float32(seconds)) * rate + 0.5))


@dataclasses.dataclass
class AudioDamage:
    """What went wrong with the audio; complete once the track has been read to its end."""

    rate: int
    packets_with_errors: int = 0  # packets the decoder rejected or the demuxer flagged corrupt
    samples_lost: int = 0  # holes in the audio after it began (lost packets), stored silent
    unreadable: str | None = None  # why no audio could be decoded at all

    def note(self) -> str | None:
        """Precise text for the video's record; None when nothing went wrong."""
        if self.unreadable:
            return f"audio stored silent: {self.unreadable}"
        parts = []
        if self.packets_with_errors:
            count = self.packets_with_errors
            parts.append(f"{plural(count, 'audio packet')} with decode errors")
        if self.samples_lost:
            parts.append(
                f"{self.samples_lost / self.rate * 1000:.0f} ms of audio lost, stored silent"
            )
        return "; ".join(parts) or None


class AudioTrack:
    """The file's default audio stream as int16 [samples, channels] on the video's clock.

    `take(end)` gives the samples from where the last take ended (0 at first, or where
    `start_at` put it) to sample `end`; `origin` is the first video frame's time on the
    container's clock (`video_io.Video.start_seconds`). Without an audio stream every take is
    silence and `has_audio` stays False; it is True once a frame of audio has been decoded.
    """

    def __init__(self, path: str, rate: int, channels: int, origin: float = 0.0):
        self.rate, self.channels, self.origin = rate, channels, origin
        self._stream = None
        self.has_audio = False
        self.damage = AudioDamage(rate)
        self._given = 0  # the next sample to hand out
        self._written: int | None = None  # where the audio placed so far ends
        self._chunks: collections.deque[tuple[int, np.ndarray]] = collections.deque()
        self._tolerance = max(1, rate // 1000)  # 1 ms: a frame this near its place is contiguous
        self._container = None
        self._frames: Iterator[av.AudioFrame] = iter(())
        try:
            self._container = av.open(path, metadata_errors="replace")
            stream = self._container.streams.best("audio")
        except (OSError, av.error.FFmpegError) as e:  # the video opened: say, and go on silent
            self.damage.unreadable = f"the file's audio cannot be read ({e})"
            return
        if stream is None:
            return
        if stream.codec_context is None:
            self.damage.unreadable = "FFmpeg has no decoder for the audio stream's codec"
            return
        demux.keep_only(self._container, stream)
        stream.codec_context.thread_count = 1
        self._stream = stream
        self._frames = self._resampled(stream)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._container is not None:
            self._container.close()

    def start_at(self, sample: int) -> None:
        """Has the first take start at `sample`, the audio decoded from a packet at or before it.

        FFmpeg's backward seek, checked by the first decoded frame's time: without an index
        (MPEG program and transport streams) it lands on a packet near the time asked for,
        often after it, which would leave the span's first milliseconds silent. A late landing
        seeks again from earlier (by as much as it was late, and `RETREAT`), then the stream
        is decoded from its start (as it is should the container not seek)."""
        self._given = sample
        if self._stream is None or sample <= 0 or not self._stream.time_base:
            return
        base = self._stream.time_base
        target = math.floor((self.origin + sample / self.rate) / base)
        for _ in range(2):
            try:
                self._container.seek(max(target, 0), stream=self._stream, backward=True)
            except av.error.FFmpegError:
                break
            late = self._restart() - sample
            if late <= self._tolerance:
                return
            target -= math.ceil((late / self.rate + RETREAT) / base)
        try:  # from the start: the audio before `sample` is dropped as it is placed
            self._container.seek(0, backward=True)
        except av.error.FFmpegError:
            pass  # where the last seek landed: the span's first samples stay silent
        self._restart()

    def _restart(self) -> int:
        """Decodes from where the container now is (after a seek), dropping what was decoded
        before; the first sample placed (that of the first frame's time), or `_given` if none."""
        self._frames.close()
        self._chunks.clear()
        self._written = None
        self._frames = self._resampled(self._stream, seeked=True)
        frame = next(self._frames, None)
        if frame is None:
            return self._given
        self._place(frame, self.origin)
        return self._chunks[0][0] if self._chunks else self._given

    def take(self, end: int) -> np.ndarray:
        """int16 [end - start, channels]: the samples from the last take's end to `end`."""
        while self._written is None or self._written < end:
            frame = next(self._frames, None)
            if frame is None:
                break
            self._place(frame, self.origin)
        start = self._given
        out = np.zeros((max(end - start, 0), self.channels), np.int16)
        while self._chunks:
            at, data = self._chunks[0]
            stop = at + len(data)
            if at >= end:
                break
            low, high = max(at, start), min(stop, end)
            if low < high:
                out[low - start : high - start] = data[low - at : high - at]
            if stop > end:
                break
            self._chunks.popleft()
        self._given = max(end, start)
        return out

    def read_to_end(self) -> None:
        """Decodes what is left of the stream (its damage counted), storing none of it."""
        for _ in self._frames:
            pass
        self._chunks.clear()

    def _place(self, frame: av.AudioFrame, origin: float) -> None:
        """Puts a resampled frame where its time says, trimming what overlaps audio placed."""
        count = frame.samples * self.channels  # packed s16: interleaved channels
        data = np.frombuffer(frame.planes[0], np.int16, count).reshape(-1, self.channels)
        seconds_per_tick = float(frame.time_base or 0)
        if frame.pts is not None and seconds_per_tick:
            seconds = frame.pts * seconds_per_tick - origin
            at = int(np.floor(seconds * self.rate + 0.5))  # to the nearest, as sample_at
        else:  # no time: right after the audio before it
            at = self._written if self._written is not None else 0
        if self._written is not None:
            if abs(at - self._written) <= self._tolerance:
                at = self._written
            elif at > self._written:
                self.damage.samples_lost += at - self._written
            elif at < self._written:  # overlaps the audio before it: that audio stays
                data = data[self._written - at :]
                at = self._written
        if len(data):
            self._chunks.append((at, data))
            self._written = at + len(data)

    def _resampled(self, stream, seeked: bool = False) -> Iterator[av.AudioFrame]:
        """The stream's frames through FFmpeg's resampler (a new one if the format changes).

        One call per decoded frame: joining frames first saves no time, swresample's own
        work being most of it (docs/performance.md, audio)."""
        resampler = None
        for frame in self._decoded(stream, seeked):
            self.has_audio = True
            if resampler is not None:
                try:
                    yield from resampler.resample(frame)
                    continue
                except ValueError:  # the stream changed its layout or rate: start anew
                    yield from resampler.resample(None)
            resampler = av.AudioResampler("s16", _LAYOUTS[self.channels], self.rate)
            yield from resampler.resample(frame)
        if resampler is not None:
            yield from resampler.resample(None)

    def _decoded(self, stream, seeked: bool = False) -> Iterator[av.AudioFrame]:
        """The stream's decoded frames; counts the packets the decoder rejects. After a seek
        (`seeked`), those before the first frame decoded are not damage: a seek in a program
        stream lands within a frame, whose tail the decoder rejects (`start_at` seeks again
        should that leave the span's start without audio)."""
        decoder = stream.codec_context
        packets = demux.stream_packets(self._container, stream, self.damage)
        for packet in itertools.chain(packets, [None]):  # None drains it
            try:
                frames = decoder.decode(packet)
            except av.error.FFmpegError:
                frames = None
            if packet is not None and (frames is None or packet.is_corrupt) and not seeked:
                self.damage.packets_with_errors += 1
            seeked = seeked and not frames
            yield from frames or ()
