"""Where a span's first frame is in its video: how many frames a decode from the video's start
shows before a time, told without decoding (a seek to the keyframe before a span cannot tell).

A frame is a packet, shown at its presentation stamp (an edit list's hidden packets and VP8's
hidden alt-ref frames aside). Where the container's index lists every packet (MP4/MOV's sample
tables, AVI's idx1), the packets before a keyframe well before the time are counted there and
only those from that keyframe on are read; elsewhere (Matroska, WebM, MPEG program and
transport streams) the packets are read from the start up to the time: a demux, ~4 µs a
packet, a small part of decoding them.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence

import av

from video_tfrecords.ingest import demux, video_io

__all__ = ["frames_before"]

# Seconds a packet's presentation may come before that of a packet decoded ahead of it
# (B-frames): past a decode stamp this much later than a time, no packet shows before it.
REORDER = 2.0
INDEXED = ("mov", "avi")  # FFmpeg's demuxers whose index lists every packet of the stream


def frames_before(path: str, times: Sequence[float]) -> list[int]:
    """How many frames the video at `path` shows before each of `times` (seconds from its
    first frame, as frames are timed). VideoError if FFmpeg cannot read its packets."""
    if not times:
        return []
    try:
        try:
            return _frames_before(path, times, use_index=True)
        except av.error.FFmpegError:  # a seek that failed: read from the start
            return _frames_before(path, times, use_index=False)
    except av.error.FFmpegError as e:
        raise video_io.VideoError(f"cannot count its frames (FFmpeg: {e.strerror})") from None


def _frames_before(path: str, times: Sequence[float], use_index: bool) -> list[int]:
    container, stream = demux.open_video(path, threads=1)  # the stream a decode reads
    with container:
        packets = _Packets(container, stream)
        base = float(stream.time_base)
        last = max(times)
        if not (use_index and _indexed(container, stream)):
            stamps = packets.stamps(stop=lambda first: first + (last + REORDER) / base)
            origin = min(stamps, default=0)
            return [_below(stamps, origin + (t - video_io.EPSILON) / base) for t in times]
        origin = min(packets.stamps(stop=lambda first: first + REORDER / base), default=0)
        entries = [
            (e.timestamp, e.is_keyframe) for e in stream.index_entries
            if e.size and not e.is_discard
        ]  # fmt: skip
        return [packets.count(entries, origin + (t - video_io.EPSILON) / base) for t in times]


def _indexed(container, stream) -> bool:
    """Whether the container's index lists every packet of `stream`: a sample table or idx1
    that counts them (a fragmented MP4's index holds the fragments read or a sidx's, and
    counts none), and no VP8, whose hidden frames only a packet's bytes tell."""
    names = container.format.name.split(",")
    listed = any(n in INDEXED for n in names) and stream.frames > 0
    return listed and stream.codec_context.name != "vp8"


def _order(entry: tuple[int, bool]) -> int:
    return entry[0]


def _below(stamps: list[int], stamp: float) -> int:
    return bisect.bisect_left(stamps, stamp)


class _Packets:
    """The stream's packets that show a frame, as (presentation stamp, decode order stamp)."""

    def __init__(self, container, stream):
        self.container, self.stream = container, stream
        self.vp8 = stream.codec_context.name == "vp8"
        self.moved = False  # whether the demuxer has left the start

    def shown(self) -> Iterator[tuple[int, int]]:
        """From where the demuxer stands: each shown packet's (stamp, order stamp)."""
        damage = video_io.Damage()  # a demuxer error skips on, as a decode does
        self.moved = True
        for packet in demux.stream_packets(self.container, self.stream, damage):
            stamp = packet.pts if packet.pts is not None else packet.dts
            hidden = self.vp8 and not bytes(packet)[0] & 0x10  # VP8's show_frame bit
            if stamp is not None and not packet.is_discard and not hidden:
                yield stamp, packet.dts if packet.dts is not None else stamp

    def stamps(self, stop) -> list[int]:
        """The sorted stamps from the start up to the first packet decoded after
        `stop(first packet's stamp)`, which no packet after it shows before."""
        if self.moved:
            self.container.seek(0)
        stamps, limit = [], None
        for stamp, order in self.shown():
            limit = stop(stamp) if limit is None else limit
            stamps.append(stamp)
            if order > limit:
                break
        return sorted(stamps)

    def count(self, entries: list[tuple[int, bool]], stamp: float) -> int:
        """The packets shown before `stamp`: the index's entries before a keyframe decoded
        REORDER before it (FFmpeg's seek lands on it or an earlier one), then the packets
        read from there on."""
        margin = REORDER / float(self.stream.time_base)
        end = bisect.bisect_left(entries, stamp - margin, key=_order)
        key = next((i for i in range(end - 1, -1, -1) if entries[i][1]), None)
        if key is not None:
            self.container.seek(entries[key][0], stream=self.stream, backward=True)
            shown = self.shown()
            first = next(shown, None)
            landed = -1 if first is None else bisect.bisect_left(entries, first[1], key=_order)
            if 0 <= landed <= key and entries[landed][0] == first[1]:  # a packet indexed
                read = _until(itertools.chain([first], shown), stamp + margin)
                return landed + sum(1 for s, _ in read if s < stamp)
        stamps = self.stamps(stop=lambda first: stamp + margin)
        return _below(stamps, stamp)


def _until(packets: Iterator[tuple[int, int]], limit: float) -> Iterator[tuple[int, int]]:
    """The packets up to the first decoded after `limit`."""
    for stamp, order in packets:
        yield stamp, order
        if order > limit:
            return
