"""A video file opened with FFmpeg's demuxer, through PyAV: why it cannot be, the video stream
FFmpeg picks, its packets read past demuxer errors, a seek's packets stamped as a demux from
the file's start stamps them (`WholeDemux`), and seeks to an AVI's keyframes, placed by its
index or, where that misplaces them, by its packets (`Keyframes`).

`video_io` decodes what this opens (and opens a file anew when FFmpeg's seek in it fails);
`audio_io` reads its audio stream's packets the same way.
"""

from __future__ import annotations

import array
import bisect
import os
import types
import zlib
from collections.abc import Iterator

import av

from video_tfrecords.ingest import file_structure

__all__ = [
    "PARSER_STAMPED", "Keyframes", "NotFound", "VideoError", "WholeDemux", "check_file",
    "index_misleads", "keep_only", "open_video", "stream_packets",
]  # fmt: skip

# FFmpeg's demuxers whose packets its parser cuts out of PES payloads, stamping the packet
# whose picture starts first in a PES with the PES's time and the others by adding durations:
# MPEG program streams (.mpg, .vob). Transport streams as muxers write them carry a stamped
# PES per picture: their spans were right without (tests/test_seek.py).
PARSER_STAMPED = ("mpeg",)
SEARCH = 64  # packets after a seek among which one must be found in the whole demux
_NONE = -(2**63)  # a stamp FFmpeg does not have (its AV_NOPTS_VALUE)


class VideoError(Exception):
    """The file cannot be read as a video; the message says why (the caller names the file)."""


def check_file(path: str) -> None:
    """Reasons FFmpeg would only report vaguely."""
    if not os.path.exists(path):
        raise VideoError("file not found")
    if os.path.isdir(path):
        raise VideoError("is a directory, not a video file")
    if os.path.getsize(path) == 0:
        raise VideoError("empty file (0 bytes)")


def open_video(path: str, threads: int):
    """(container, stream): the file opened and the video stream FFmpeg picks (`_video_stream`),
    its decoder on `threads` threads; VideoError saying why not."""
    container = _open(path)
    try:
        stream = _video_stream(container)
    except BaseException:
        container.close()
        raise
    stream.codec_context.thread_count = max(1, threads)  # parallel builds: a decoder per core
    stream.codec_context.thread_type = "AUTO"  # frame and slice threads, when more than one
    return container, stream


def _open(path: str) -> av.container.InputContainer:
    """Opens the container, or raises VideoError saying why FFmpeg could not."""
    try:
        return av.open(path, metadata_errors="replace")
    except av.error.InvalidDataError as e:
        if file_structure.is_mp4_without_index(path):
            raise VideoError("index (moov) missing: file truncated") from None
        raise VideoError(f"not a video (FFmpeg: {e.strerror})") from None
    except OSError as e:  # permissions, I/O errors
        raise VideoError(f"cannot read the file ({e.strerror or e})") from None
    except av.error.FFmpegError as e:
        raise VideoError(f"not a video (FFmpeg: {e.strerror})") from None


def _video_stream(container) -> av.video.stream.VideoStream:
    """The stream FFmpeg picks, as TorchCodec and decord do: av_find_best_stream's (the default
    disposition first, then more frames probed, then bit rate); never a cover picture (should
    that ranking put one first, the first other video stream). The demuxer skips the others."""
    still = av.stream.Disposition.attached_pic
    streams = [s for s in container.streams.video if not s.disposition & still]
    if not streams:
        raise VideoError("no video stream")
    best = container.streams.best("video")
    stream = best if best in streams else streams[0]
    if stream.codec_context is None:
        raise VideoError("codec is not supported: FFmpeg has no decoder for this video stream")
    keep_only(container, stream)
    return stream


def keep_only(container, stream) -> None:
    """Has the demuxer skip every stream but `stream`."""
    for other in container.streams:
        if other is not stream:
            other.discard = av.stream.Discard.all


def stream_packets(container, stream, damage) -> Iterator[av.Packet]:
    """`stream`'s packets; a demuxer error counts as a damaged packet (`damage.
    packets_with_errors`) and reading resumes, up to 16 errors in a row."""
    failures_in_a_row = 0
    while failures_in_a_row < 16:
        try:
            for packet in container.demux(stream):
                failures_in_a_row = 0
                if packet.size:
                    yield packet
            return
        except av.error.FFmpegError:
            failures_in_a_row += 1
            damage.packets_with_errors += 1


def index_misleads(container, stream) -> bool:
    """Whether FFmpeg's seek in this AVI cannot find the keyframe before a time: its index flags
    at most one picture a keyframe (an idx1 without keyframe flags, where FFmpeg flags the
    first: every seek lands on the file's start; no idx1 at all, as in a cut file), or every
    picture of a codec that has others (a seek lands on a P- or B-frame, decoded from grey)."""
    if "avi" not in container.format.name.split(","):
        return False
    keys = others = 0
    for entry in stream.index_entries:
        keys += entry.is_keyframe
        others += not entry.is_keyframe
        if keys > 1 and others:
            return False
    return keys <= 1 or not stream.codec_context.codec.intra_only


class Keyframes:
    """Seeks in an AVI to the keyframe before a decode stamp, known by its stamp: a seek that
    lands late can then go to the keyframe before the one it landed on (`sought`).

    The keyframes are the index's, or, where it misplaces them (`scan`: `index_misleads`), the
    packets' own flags: FFmpeg's parser flags each packet it cuts by the picture's type (MPEG-4
    Part 2's VOP type, H.264's IDR), whatever the index says. The stream is then demuxed, not
    decoded (a few µs a packet), from its start as far as a seek asks, each stretch once. The
    seek goes to the keyframe's own packet (`any_frame`), the index's entry for it."""

    def __init__(self, container, stream, scan: bool):
        self._container, self._stream = container, stream
        # the decode stamps of the keyframes known, in order
        self._keys = [] if scan else [e.timestamp for e in stream.index_entries if e.is_keyframe]
        self._last: int | None = None  # the decode stamp of the last packet read
        self._ended = not scan
        self.sought: int | None = None  # the keyframe the last seek went to

    def seek(self, tick: int) -> bool:
        """Has the container seek to the last keyframe decoded at or before `tick` (False: none
        is). The demuxer is left where the seek puts it; FFmpegError if it cannot seek."""
        if not self._ended and (self._last is None or self._last <= tick):
            self._read(tick)
        found = bisect.bisect_right(self._keys, tick)
        if not found:
            return False
        self.sought = self._keys[found - 1]
        self._container.seek(self.sought, stream=self._stream, any_frame=True)
        return True

    def _read(self, tick: int) -> None:
        """Reads on from the last packet read (or the start) to the first decoded after `tick`."""
        start = 0 if self._last is None else self._last
        self._container.seek(start, stream=self._stream, any_frame=True)
        errors = types.SimpleNamespace(packets_with_errors=0)  # the decode counts damage
        for packet in stream_packets(self._container, self._stream, errors):
            stamp = packet.dts if packet.dts is not None else packet.pts
            if stamp is None or (self._last is not None and stamp <= self._last):
                continue
            if packet.is_keyframe:
                self._keys.append(stamp)
            self._last = stamp
            if stamp > tick:
                return
        self._ended = True


class NotFound(Exception):
    """None of the first packets after a seek is one the demux from the file's start gives."""


class WholeDemux:
    """The stream's packets as a demux from the file's start cuts and stamps them (a second
    opening of the file, read only as far as asked), to stamp those of a demux after a seek
    (`restamped`): a span's frames are then timed as the whole file's decode times them.

    After a seek in an MPEG program stream FFmpeg's parser starts inside a PES: it cuts the
    tail of the picture before for a packet of its own, gives it the PES's stamp (that of the
    picture after), and stamps every next picture that packet's duration late (a field, half
    a frame, here) up to the next PES that carries a stamp; with B-frames, out of order. From
    the first whole picture on, the packets' bytes are those of the whole demux, so each is
    found there exactly, by the PES position FFmpeg gives a stamped packet and its size and
    CRC32, and takes that packet's stamps. Matching frames to true stamps by time instead
    would be a coin toss (half a frame late is as near to the next frame as to its own), and
    decoding from the start would cost a span at a film's end the whole film: this demux
    reads a minute of DVD video in ~35 ms, 5% of decoding it.
    """

    def __init__(self, path: str):
        self._path, self._packets, self._container = path, None, None
        self._pts, self._dts = array.array("q"), array.array("q")
        self._keys = array.array("Q")  # size << 32 | CRC32 of each packet's bytes
        self._at: dict[int, int] = {}  # a stamped packet's PES position: its index
        self._last_pos = -1

    def close(self) -> None:
        if self._container is not None:
            self._container.close()
        self._packets = None

    def restamped(self, packets: Iterator[av.Packet]) -> Iterator[av.Packet]:
        """`packets`, demuxed after a seek, with the stamps the whole demux gives them. Those
        before the first found there are dropped (the tail of a picture: no frame); NotFound
        when none of the first `SEARCH` is. A later packet not found (damage) keeps FFmpeg's
        stamps, and the next stamped PES is looked for."""
        following, found = None, False  # the whole demux's packet that comes next, if known
        for count, packet in enumerate(packets):
            key = packet.size << 32 | zlib.crc32(packet)
            if following is None or self._key(following) != key:
                anchor = self._index_of(packet.pos)
                if anchor is None or self._key(anchor) != key:
                    following = anchor  # a picture's tail: the anchor's packet comes next
                    if found:
                        yield packet
                    elif count + 1 >= SEARCH:
                        raise NotFound
                    continue
                following = anchor
            packet.pts = None if self._pts[following] == _NONE else self._pts[following]
            packet.dts = None if self._dts[following] == _NONE else self._dts[following]
            following, found = following + 1, True
            yield packet

    def _key(self, index: int) -> int | None:
        """Packet `index`'s size and CRC32 (None past the stream's end)."""
        while len(self._keys) <= index and self._read():
            pass
        return self._keys[index] if index < len(self._keys) else None

    def _index_of(self, pos: int | None) -> int | None:
        """The index of the packet stamped from the PES at byte `pos` (None: none is)."""
        if pos is None or pos < 0:
            return None
        while self._last_pos < pos and self._read():
            pass
        return self._at.get(pos)

    def _read(self) -> bool:
        """One more packet of the whole demux; False at its end."""
        if self._packets is None and self._container is None:
            self._container, stream = open_video(self._path, threads=1)
            errors = types.SimpleNamespace(packets_with_errors=0)  # the decode counts damage
            self._packets = stream_packets(self._container, stream, errors)
        packet = next(self._packets, None) if self._packets is not None else None
        if packet is None:
            return False
        if packet.pos is not None and packet.pos >= 0:
            self._at.setdefault(packet.pos, len(self._keys))
            self._last_pos = max(self._last_pos, packet.pos)
        self._keys.append(packet.size << 32 | zlib.crc32(packet))
        self._pts.append(_NONE if packet.pts is None else packet.pts)
        self._dts.append(_NONE if packet.dts is None else packet.dts)
        return True
