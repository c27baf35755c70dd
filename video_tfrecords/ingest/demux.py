"""A video file opened with FFmpeg's demuxer, through PyAV: why it cannot be, the video stream
FFmpeg picks, and its packets read past demuxer errors.

`video_io` decodes what this opens (and opens a file anew when FFmpeg's seek in it fails);
`audio_io` reads its audio stream's packets the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import av

from video_tfrecords.ingest import file_structure

__all__ = ["VideoError", "check_file", "keep_only", "open_video", "stream_packets"]


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
