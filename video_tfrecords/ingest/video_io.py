"""Decodes a video file frame by frame with FFmpeg's libraries, through PyAV.

FFmpeg decodes every codec a corpus holds (AV1 included), conceals damaged
packets and goes on, honours MP4 edit lists and stamps each frame. This module
adds what a dataset needs on top of the stream `demux` opens: each frame's time
by FFmpeg's own rule (`timestamps`), a span's frames from a checked seek,
interlaced frames deinterlaced (`deinterlace`), the display geometry (sample
aspect ratio, rotation), colour converted with the stream's own matrix and
range, a count of the damage, and reasons for files it cannot read. It imports
neither TensorFlow nor TFDS, which keeps build workers light to start.
"""

from __future__ import annotations

import dataclasses
import fractions
import itertools
import math
import os
from collections.abc import Iterator
from typing import Self

import av
import cv2
import numpy as np
from av.video.reformatter import Interpolation, VideoReformatter

from video_tfrecords.ingest import deinterlace, demux, file_structure, timestamps
from video_tfrecords.ingest.demux import VideoError
from video_tfrecords.util.text import plural

# Codecs whose every packet holds exactly one picture: a packet that gives no frame was lost.
# Not MPEG-4 Part 2 (not-coded VOPs), VP8 (hidden alt-ref packets) or interlaced fields.
_ONE_PICTURE_PER_PACKET = {"h264", "hevc", "vp9", "av1", "mjpeg"}
_ROTATE = {90: cv2.ROTATE_90_CLOCKWISE, 180: cv2.ROTATE_180, 270: cv2.ROTATE_90_COUNTERCLOCKWISE}
_AREA = Interpolation.AREA | Interpolation.FULL_CHR_H_INT
FALLBACK_FPS = 25.0  # FFmpeg's own guess for a stream that states no rate
EPSILON = 1e-6  # seconds: a frame this close to a span's start or end is at it
RETREAT = 1.0  # seconds further back a seek that landed after a span's start tries again


@dataclasses.dataclass(frozen=True)
class VideoInfo:
    """What the stream says about its pictures, known before the frames are read."""

    codec: str  # FFmpeg's codec name ("h264", "av1", "vp9", "hevc", ...)
    coded_height: int  # of the decoded pictures
    coded_width: int
    sample_aspect_ratio: fractions.Fraction  # 1 when unknown or square
    rotation: int  # 0/90/180/270: clockwise turn that shows the picture upright
    display_height: int  # after the sample aspect ratio, then the rotation
    display_width: int
    average_fps: float  # 0.0 if unknown
    reported_num_frames: int  # what the container claims, 0 if unknown
    pixel_format: str  # e.g. "yuv420p", "yuv420p10le"

    @property
    def nominal_fps(self) -> float:
        """The stream's rate, else FFmpeg's own guess for a stream that states none."""
        return self.average_fps or FALLBACK_FPS


@dataclasses.dataclass
class Damage:
    """What went wrong while decoding; complete once `Video.frames()` has run to its end."""

    packets_with_errors: int = 0  # packets the decoder rejected or the demuxer flagged corrupt
    truncated: bool = False  # the file ends before the data its index points to
    timestamps_missing: bool = False  # frame order was used as time (FFmpeg had no time either)
    timestamps_misordered: int = 0  # frames FFmpeg timed no later than the frame before
    corrupt_frames: int = 0  # frames FFmpeg output with damage concealed
    frames_lost: int = 0  # packets of one-picture-per-packet codecs that gave no picture

    def note(self) -> str | None:
        """Precise text for the video's record; None when nothing went wrong."""
        parts = []
        if self.truncated:
            parts.append("truncated: the file ends before its index does")
        if self.packets_with_errors:
            parts.append(f"{plural(self.packets_with_errors, 'packet')} with decode errors")
        if self.corrupt_frames:
            parts.append(f"{plural(self.corrupt_frames, 'frame')} concealed by FFmpeg")
        if self.frames_lost:
            parts.append(f"{plural(self.frames_lost, 'frame')} lost (packets that gave no picture)")
        if self.timestamps_missing:
            parts.append("no timestamps: frame order used as time, at the stream's average rate")
        if self.timestamps_misordered:
            parts.append(
                f"{plural(self.timestamps_misordered, 'frame')} timed by FFmpeg no later than "
                "the frame before: placed after it"
            )
        return "; ".join(parts) or None


class Frame:
    """One decoded picture, converted to pixels only when asked (frames a build skips cost none)."""

    __slots__ = ("_picture", "_rotation", "_scaler", "_threads", "index", "time")

    def __init__(self, index, time, picture, rotation, scaler, threads):
        self.index = index  # 0-based, in presentation order
        self.time = time  # seconds from the first frame, from FFmpeg's timestamps
        self._picture = picture
        self._rotation = rotation
        self._scaler = scaler
        self._threads = threads

    def bgr(self, height: int, width: int) -> np.ndarray:
        """uint8 [height, width, 3] BGR, upright, in FFmpeg's own colour conversion.

        swscale reads the picture's matrix and range (BT.601/709/2020, limited or full, 8 or
        10 bits) as FFmpeg's RGB output does. Shrinking 2x or more is fused into that pass
        (area averaging, chroma at full resolution): a third of the cost of converting first.
        Milder resizes convert first, then OpenCV's bilinear resize, twice as fast as swscale's.
        The rotation, a lossless quarter turn, comes last.
        """
        turned = self._rotation in (90, 270)
        size = (width, height) if turned else (height, width)
        picture = self._picture
        if size[0] * 2 <= picture.height or size[1] * 2 <= picture.width:
            pixels = self._convert(width=size[1], height=size[0], interpolation=_AREA)
        else:
            pixels = self._convert()
            if pixels.shape[:2] != size:
                pixels = cv2.resize(pixels, size[::-1], interpolation=cv2.INTER_LINEAR)
        if self._rotation:
            pixels = cv2.rotate(pixels, _ROTATE[self._rotation])
        return np.ascontiguousarray(pixels)

    def _convert(self, **scaling) -> np.ndarray:
        """The picture in BGR through swscale, on the caller's thread budget."""
        picture = self._scaler.reformat(
            self._picture, format="bgr24", threads=self._threads, **scaling
        )
        return picture.to_ndarray()


class Video:
    """An open video file: `info` at once, then `frames()` once (or once per span, in time
    order); `damage` filled as they go."""

    def __init__(self, path: str, *, threads: int = 1, deinterlace: bool = True):
        demux.check_file(path)
        self._path, self._threads = path, max(1, threads)
        self._timing: timestamps.Timing | None = None  # made by frames()
        self._deinterlace = deinterlace
        self._container, self._stream = demux.open_video(path, self._threads)
        # A seek's packets stamped as the demux from the start stamps them, where FFmpeg's
        # parser stamps them (`demux.WholeDemux`): read only once a span seeks.
        parsed = self._container.format.name in demux.PARSER_STAMPED
        self._whole = demux.WholeDemux(path) if parsed else None
        self._keys: demux.Keyframes | bool | None = None  # False: FFmpeg's seek; None: unknown
        try:
            truncated = file_structure.declared_size(path) > os.path.getsize(path)
            self.damage = Damage(truncated=truncated)
            self.pictures_decoded = 0  # what decoding cost: pictures out of the decoder
            self._pictures = self._decode()
            first = next(self._pictures, None)
            if first is None:
                raise VideoError("no frame could be decoded")
            self._first = first
            self.info = _info(self._stream, first)
            # The video's first frame's stamp: time 0 of every span's frames (None: unknown,
            # and spans are then found by decoding from the start, not by seeking).
            tick = first.pts if first.pts is not None else first.dts
            self._origin = tick if self._stream.time_base and tick is not None else None
            self.ended = False  # whether the last `frames()` ran to the end of the video
            self._last_times = (0.0, None)  # the last two frames the last `frames()` timed
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._container.close()
        if self._whole is not None:
            self._whole.close()

    def frames(self, start: float = 0.0, end: float = math.inf) -> Iterator[Frame]:
        """Every frame FFmpeg outputs for the stream, in order, going on past damaged packets;
        with `start`/`end` (seconds on the frames' clock) only those timed from `start` up to,
        not including, `end`.

        Times are FFmpeg's best-effort timestamps (`timestamps`): the pts, or the dts where the
        pts go backwards more often, in seconds from the video's first frame. With
        `deinterlace`, frames FFmpeg flags interlaced come through its bwdif filter, before any
        resize; times and count stay the same. A `start` past the first frame seeks to a
        keyframe before it (`_seek`) and decodes from there: a span costs the decode of its
        own frames and those from that keyframe on, not of the video before it. `index`
        counts the frames given, from 0.
        """
        scaler = VideoReformatter()
        if self._first is not None and (start <= EPSILON or self._origin is None):
            timed = self._timed(itertools.chain([self._first], self._pictures), None)
        else:
            timed = self._seek(start)
        self._first, timing = None, self._timing
        if self._deinterlace:
            timed = deinterlace.deinterlaced(timed, self._threads)
        self.ended, index, timed_before = False, 0, False
        try:
            for time, picture in timed:
                self._last_times = (time, self._last_times[0] if timed_before else None)
                timed_before = True
                if time >= end - EPSILON:
                    return
                if time >= start - EPSILON:
                    yield Frame(index, time, picture, self.info.rotation, scaler, self._threads)
                    index += 1
            self.ended = True
        except deinterlace.DeinterlaceError as e:
            raise VideoError(f"{e}; deinterlace=False stores the frames as decoded") from None
        finally:
            self.damage.timestamps_missing |= timing.missing
            self.damage.timestamps_misordered += timing.misordered

    def _seek(self, start: float) -> Iterator[tuple[float, av.VideoFrame]]:
        """The frames, timed, from a keyframe at or before `start` on: FFmpeg's seek on the
        stream (backward, keyframes only), checked by the first frame's time.

        Without an index (MPEG program and transport streams, AVI's is of decode order) FFmpeg
        finds the keyframe by decode time: it can land after `start`, on a keyframe whose
        leading pictures (open GOP) it then drops, even on the second keyframe for the first
        frame's own time. A first frame later than `start` has it seek again from earlier (by
        as much as it was late, and `RETREAT`), then the file decoded from its start, as the
        whole-file decode does (as is a file FFmpeg cannot seek in). In an MPEG program stream
        the packets take the stamps a demux from the start gives them (`demux.WholeDemux`);
        none found there, the file is decoded from its start too. In an AVI the keyframes are
        known (`demux.Keyframes`: the index's, or the packets' where the index has no keyframe
        flags, or none, which sent every seek to the start, or flags every picture, which
        landed on P-frames): a late landing seeks to the keyframe before the one it landed on,
        whose GOP holds the pictures shown before it (an open GOP's leading B-frames need it).
        """
        self._first = None
        base = self._stream.time_base
        target = self._origin + math.floor(start / base)
        for _ in range(2):
            try:
                if target < self._origin or not self._seek_to(target):
                    break
            except av.error.FFmpegError:
                break
            timed = self._timed(self._restart(), self._origin)
            try:
                first = next(timed, None)
            except demux.NotFound:  # its packets not found in the whole demux: from the start
                break
            if first is None:
                break
            if first[0] <= start + EPSILON:
                return itertools.chain([first], timed)
            if self._keys:  # an AVI: from the keyframe before the one it landed on
                target = self._keys.sought - 1
            else:
                target -= math.ceil((first[0] - start + RETREAT) / base)
        self._container.close()  # from the start: opened anew (FFmpeg's seek is what failed)
        self._container, self._stream = demux.open_video(self._path, self._threads)
        self._keys = None
        return self._timed(self._restart(seeked=False), None)

    def _seek_to(self, tick: int) -> bool:
        """FFmpeg's seek to the keyframe decoded at or before `tick` (False: none is before it);
        in an AVI to the one its index places (or where that misplaces keyframes,
        `demux.index_misleads`, its packets)."""
        if self._keys is None:
            avi = "avi" in self._container.format.name.split(",")
            scan = avi and demux.index_misleads(self._container, self._stream)
            self._keys = avi and demux.Keyframes(self._container, self._stream, scan)
        if self._keys:
            return self._keys.seek(tick)
        self._container.seek(tick, stream=self._stream, backward=True)
        return True

    def _restart(self, seeked: bool = True) -> Iterator[av.VideoFrame]:
        """The pictures from where the container now is (after a seek, or opened anew), those
        decoded before dropped."""
        self._pictures.close()
        self._pictures = self._decode(seeked)
        return self._pictures

    def _timed(self, pictures, origin: int | None) -> Iterator[tuple[float, av.VideoFrame]]:
        """(time, picture) of each picture (`timestamps.Timing`); `origin`: the video's first
        frame's stamp when the pictures start after a seek, None when they are the video's."""
        self._timing = timing = timestamps.Timing(
            seconds_per_tick=float(self._stream.time_base or 0),
            period=1.0 / self.info.nominal_fps,
            origin_stamp=origin,
        )
        return timing.times((p.pts, p.dts, p) for p in pictures)

    @property
    def end(self) -> float:
        """When the last frame timed stops showing: its time plus the gap before it (a frame
        period for a video's only frame). With `ended`, the video's end."""
        last, before = self._last_times
        return last + (last - before if before is not None else 1.0 / self.info.nominal_fps)

    @property
    def start_seconds(self) -> float:
        """The first frame's time on the container's clock (its stamp in seconds), known once
        `frames()` has yielded it: what time 0 of the stored `timestamps` is. 0 without one."""
        timing = self._timing
        return 0.0 if timing is None or timing.origin is None else timing.origin

    def _decode(self, seeked: bool = False) -> Iterator[av.VideoFrame]:
        """The stream's pictures; counts the packets the decoder rejects, the frames it conceals
        or loses. After a seek, packets shown before the first picture are leading pictures of
        an open GOP, or those before the keyframe, that FFmpeg drops: not lost."""
        decoder, damage = self._stream.codec_context, self.damage
        sent = output = 0
        early = [] if seeked else None  # the pts of packets sent before the first picture
        shown_from = None  # the first picture's pts after a seek
        interlaced = False
        packets = demux.stream_packets(self._container, self._stream, damage)
        if seeked and self._whole is not None:
            packets = self._whole.restamped(packets)
        for packet in itertools.chain(packets, [None]):  # None drains the decoder
            try:
                pictures = decoder.decode(packet)
            except av.error.FFmpegError:
                pictures = None
            if packet is not None:
                if packet.is_discard:  # an edit list's hidden packets give no picture
                    pass
                elif early is not None:
                    early.append(packet.pts)
                else:
                    sent += None in (shown_from, packet.pts) or packet.pts >= shown_from
                if pictures is None or packet.is_corrupt:
                    damage.packets_with_errors += 1
            for picture in pictures or ():
                if early is not None:
                    shown_from, shown = picture.pts, early
                    early = None
                    sent += sum(None in (shown_from, pts) or pts >= shown_from for pts in shown)
                output += 1
                self.pictures_decoded += 1
                damage.corrupt_frames += picture.is_corrupt
                interlaced = interlaced or picture.interlaced_frame
                yield picture
        if decoder.codec.canonical_name in _ONE_PICTURE_PER_PACKET and not interlaced:
            damage.frames_lost += max(0, sent - output)


def count_frames(path: str, *, threads: int = 1, start: float = 0.0, end: float = math.inf) -> int:
    """The frames that decode (from `start` to `end`), counted without converting any
    (container headers can be wrong)."""
    with Video(path, threads=threads, deinterlace=False) as video:
        return sum(1 for _ in video.frames(start, end))


def _info(stream, first: av.VideoFrame) -> VideoInfo:
    """The geometry and rates of the stream, the first picture giving size and rotation."""
    sar = stream.sample_aspect_ratio
    sar = sar if sar and sar > 0 else fractions.Fraction(1)
    height, width = first.height, first.width
    if sar > 1:  # stretch, never squeeze, as players do
        display = height, max(1, round(width * sar))
    else:
        display = max(1, round(height / sar)), width
    clockwise = -first.rotation  # PyAV counts counterclockwise, in whole degrees
    quarters = round(clockwise / 90)
    rotation = quarters % 4 * 90 if abs(clockwise - 90 * quarters) <= 1 else 0  # no skew
    if rotation in (90, 270):
        display = display[::-1]
    rate = stream.average_rate
    return VideoInfo(
        codec=stream.codec_context.codec.canonical_name,
        coded_height=height,
        coded_width=width,
        sample_aspect_ratio=sar,
        rotation=rotation,
        display_height=display[0],
        display_width=display[1],
        average_fps=float(rate) if rate and rate > 0 else 0.0,
        reported_num_frames=max(0, stream.frames or 0),
        pixel_format=first.format.name,
    )
