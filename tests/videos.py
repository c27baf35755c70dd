"""Test videos written with PyAV's encoders, and FFmpeg's own decode of them as the reference.

Each maker writes a few small frames that show one thing real corpora hold:
a codec in its container, a display rotation, non-square pixels, a variable
frame rate, 10-bit HDR, tagged colour, a damaged packet, a cut file, an edit
list. `reference` decodes a file the plain PyAV way, with no code of
`video_io`, so the tests compare against FFmpeg itself.
"""

from __future__ import annotations

import dataclasses
import fractions
import pathlib

import av
import cv2
import numpy as np
from av.video.reformatter import ColorRange, Colorspace

import synthetic

# Codec -> containers it is found in.
CONTAINERS = {
    "libx264": ["mp4", "mkv", "mov"],
    "libx265": ["mp4", "mkv"],
    "libvpx": ["webm", "mkv"],
    "libvpx-vp9": ["webm", "mp4"],
    "libsvtav1": ["mp4", "webm", "mkv"],
    "mpeg4": ["avi", "mp4"],
    "mjpeg": ["avi", "mov"],
}
DECODED_AS = {  # FFmpeg's name of the codec each encoder writes
    "libx264": "h264",
    "libx265": "hevc",
    "libvpx": "vp8",
    "libvpx-vp9": "vp9",
    "libsvtav1": "av1",
    "mpeg4": "mpeg4",
    "mjpeg": "mjpeg",
}
QUALITY = {  # near-transparent settings: the decoded frames stay close to what was encoded
    "libx264": {"crf": "12", "preset": "veryfast"},
    "libx265": {"crf": "12", "preset": "ultrafast", "x265-params": "log-level=error"},
    "libvpx": {"crf": "8", "b": "2M"},
    "libvpx-vp9": {"crf": "15", "b": "0"},
    "libsvtav1": {"crf": "20", "preset": "10", "svtav1-params": "svt-log-level=0"},
    "mpeg4": {"qscale": "2"},
    "mjpeg": {"qscale": "2"},
}


@dataclasses.dataclass(frozen=True)
class Colour:
    """The colour tags of a stream, and the matrix and range its YUV really uses."""

    colorspace: int  # AVColorSpace
    color_range: int  # AVColorRange: 1 limited, 2 full
    color_primaries: int  # AVColorPrimaries
    color_trc: int  # AVColorTransferCharacteristic


BT601 = Colour(colorspace=6, color_range=1, color_primaries=6, color_trc=6)
BT709 = Colour(colorspace=1, color_range=1, color_primaries=1, color_trc=1)
BT709_FULL = Colour(colorspace=1, color_range=2, color_primaries=1, color_trc=1)
HLG = Colour(colorspace=9, color_range=1, color_primaries=9, color_trc=18)  # BT.2020, ARIB B67
PQ = Colour(colorspace=9, color_range=1, color_primaries=9, color_trc=16)  # BT.2020, SMPTE 2084

# AVColorSpace -> swscale's name of the same matrix (unspecified: FFmpeg assumes BT.601).
SWS_MATRIX = {1: Colorspace.ITU709, 4: Colorspace.FCC, 5: Colorspace.ITU601, 6: Colorspace.ITU601,
              7: Colorspace.SMPTE240M, 9: Colorspace.BT2020, 10: Colorspace.BT2020}  # fmt: skip


def colour_frames(num_frames: int, height: int, width: int) -> np.ndarray:
    """RGB frames of saturated, smoothly varying hues: a wrong matrix or range shows plainly."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    frames = np.empty((num_frames, height, width, 3), np.uint8)
    for t in range(num_frames):
        hue = (x / width * 170 + t * 7) % 180
        value = 90 + 150 * y / max(1, height - 1)
        hsv = np.stack([hue, np.full_like(hue, 230), value], -1).astype(np.uint8)
        frames[t] = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)
    return frames


def write(
    path,
    frames_rgb: np.ndarray,
    codec: str = "libx264",
    *,
    fps: int = 25,
    pix_fmt: str | None = None,
    colour: Colour | None = None,
    times: list[fractions.Fraction] | None = None,
    rotation: int = 0,
    sar: fractions.Fraction | None = None,
    options: dict | None = None,
    container_options: dict | None = None,
) -> str:
    """Encodes RGB frames into `path` (the container from its extension); returns the path.

    `rotation`: clockwise degrees a player turns the picture (display matrix side data).
    `times`: each frame's presentation time in seconds (a variable frame rate), may be < 0.
    `colour`: the YUV is made with that matrix and range, and the stream tagged with it.
    """
    path = str(path)
    height, width = frames_rgb.shape[1:3]
    pix_fmt = pix_fmt or ("yuvj420p" if codec == "mjpeg" else "yuv420p")
    time_base = fractions.Fraction(1, 600) if times is not None else fractions.Fraction(1, fps)
    with av.open(path, "w", options=container_options or {}) as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.options = {**QUALITY.get(codec, {}), **(options or {})}
        stream.codec_context.time_base = time_base
        if sar is not None:
            stream.codec_context.sample_aspect_ratio = sar
        if colour is not None:
            for name, value in dataclasses.asdict(colour).items():
                setattr(stream.codec_context, name, value)
        if rotation:
            stream.set_display_rotation(-rotation)  # PyAV counts counterclockwise
        for index, rgb in enumerate(frames_rgb):
            frame = _yuv(rgb, pix_fmt, colour)
            frame.time_base = time_base
            frame.pts = round(times[index] / time_base) if times is not None else index
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


def _yuv(rgb: np.ndarray, pix_fmt: str, colour: Colour | None) -> av.VideoFrame:
    """An RGB frame converted to `pix_fmt` with the matrix and range `colour` names."""
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
    if colour is None:
        return frame.reformat(format=pix_fmt)
    frame = frame.reformat(
        format=pix_fmt,
        dst_colorspace=SWS_MATRIX[colour.colorspace],
        dst_color_range=ColorRange(colour.color_range),
    )
    for name, value in dataclasses.asdict(colour).items():
        setattr(frame, name, value)
    return frame


def make(path, codec="libx264", num_frames=8, height=64, width=96, seed=0, **kwargs) -> str:
    """A short clip of synthetic motion written with `codec` (see `write`)."""
    return write(path, synthetic.moving_frames(num_frames, height, width, seed), codec, **kwargs)


# -- damage ----------------------------------------------------------------------------------------


def packet_spans(path) -> list[tuple[int, int]]:
    """(byte offset, size) of each video packet in the file, in decode order."""
    with av.open(str(path)) as container:
        return [(p.pos, p.size) for p in container.demux(video=0) if p.size]


def damage_packet(path, out, index: int, keep: int = 8, keep_fraction=0.0, zeros=False) -> str:
    """A copy of `path` whose video packet `index` has random bytes (or zeros) after its first.

    It keeps `keep` bytes (a NAL header, say), or `keep_fraction` of the packet when given.
    """
    position, size = packet_spans(path)[index]
    keep = max(keep, int(size * keep_fraction))
    data = bytearray(pathlib.Path(path).read_bytes())
    noise = np.random.default_rng(0).integers(0, 256, size - keep, dtype=np.uint8)
    data[position + keep : position + size] = bytes(size - keep) if zeros else noise.tobytes()
    pathlib.Path(out).write_bytes(data)
    return str(out)


def cut(path, out, fraction: float = 0.5) -> str:
    """A copy of `path` that stops after `fraction` of its bytes (a download cut short)."""
    data = pathlib.Path(path).read_bytes()
    pathlib.Path(out).write_bytes(data[: int(len(data) * fraction)])
    return str(out)


# -- the reference: FFmpeg's own decode ------------------------------------------------------------


@dataclasses.dataclass
class Decoded:
    """What a plain PyAV decode of a file gives: RGB frames, their times, their rotation."""

    rgb: list[np.ndarray]
    times: list[float]
    rotation: int  # counterclockwise, as PyAV reports it


def reference(path) -> Decoded:
    """Every frame FFmpeg decodes, in FFmpeg's rgb24 (the stream's own matrix and range).

    Goes on past packets the decoder rejects, as `ffprobe -count_frames` does.
    """
    rgb, times, rotation = [], [], 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        frames = []
        for packet in container.demux(stream):
            try:
                frames += stream.codec_context.decode(packet if packet.size else None)
            except av.error.FFmpegError:
                pass
        for frame in frames:
            rgb.append(to_rgb(frame))
            times.append(float(frame.pts * stream.time_base))
            rotation = frame.rotation
    return Decoded(rgb, [t - times[0] for t in times], rotation)


def decoded_frames(path) -> list[av.VideoFrame]:
    """The frames of the plainest PyAV decode loop, as they come out of FFmpeg."""
    with av.open(str(path)) as container:
        return list(container.decode(video=0))


def to_rgb(frame: av.VideoFrame) -> np.ndarray:
    """FFmpeg's rgb24 of a decoded frame, the matrix and range named explicitly from its tags."""
    return frame.to_ndarray(
        format="rgb24",
        src_colorspace=SWS_MATRIX.get(frame.colorspace, Colorspace.DEFAULT),
        src_color_range=ColorRange(frame.color_range) if frame.color_range else None,
    )


def upright(rgb: np.ndarray, rotation: int) -> np.ndarray:
    """The frame as a player shows it: turned by the counterclockwise `rotation` PyAV reports."""
    return np.ascontiguousarray(np.rot90(rgb, k=rotation // 90))


def resized(rgb: np.ndarray, height: int, width: int) -> np.ndarray:
    """The best resize of a reference frame: area averaging (OpenCV)."""
    return cv2.resize(rgb, (width, height), interpolation=cv2.INTER_AREA)


def audio_only(path) -> str:
    """An .m4a-like file with one AAC stream and no video."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("aac", rate=8000)
        stream.layout = "mono"
        for index in range(4):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 8000, index * 1024
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return str(path)


def patched(path, out, old: bytes, new: bytes) -> str:
    """A copy of `path` with every `old` replaced by `new` (e.g. a codec's fourcc)."""
    data = pathlib.Path(path).read_bytes()
    assert old in data, f"{old!r} not in {path}"
    pathlib.Path(out).write_bytes(data.replace(old, new))
    return str(out)
