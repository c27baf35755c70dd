"""Test videos written with PyAV's encoders, and FFmpeg's own decode of them as the reference.

Each maker writes a few small frames that show one thing real corpora hold:
a codec in its container, a display rotation, non-square pixels, a variable
frame rate, 10-bit HDR, tagged colour, a damaged packet, a cut file, an edit
list, XviD's packed B-frames, several video streams or a cover picture.
`reference` decodes a file the plain PyAV way, with no code of `video_io`, so
the tests compare against FFmpeg itself (with FFmpeg's bwdif for interlaced
sources).
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
    # One thread: libvpx's threaded encoder was seen spinning forever under a loaded machine
    # (two pytest workers, 12 CPU-minutes each in vpx_codec_encode on an 8-frame clip).
    "libvpx": {"crf": "8", "b": "2M", "threads": "1"},
    "libvpx-vp9": {"crf": "15", "b": "0", "threads": "1"},
    "libsvtav1": {"crf": "20", "preset": "10", "svtav1-params": "svt-log-level=0"},
    "mpeg4": {"qscale": "2"},
    "mjpeg": {"qscale": "2"},
    "mpeg2video": {"qscale": "2"},
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
    interlaced: bool = False,
) -> str:
    """Encodes RGB frames into `path` (the container from its extension); returns the path.

    `rotation`: clockwise degrees a player turns the picture (display matrix side data).
    `times`: each frame's presentation time in seconds (a variable frame rate), may be < 0.
    `colour`: the YUV is made with that matrix and range, and the stream tagged with it.
    `interlaced`: each frame is flagged interlaced, top field first (FFmpeg's setfield), and
    coded so (interlaced DCT and motion estimation; for libx264 also its `interlaced=1:tff=1`,
    MBAFF), so that FFmpeg flags the decoded frames interlaced.
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
        if interlaced:
            flags = av.codec.context.Flags
            stream.codec_context.flags |= flags.interlaced_dct | flags.interlaced_me
            if codec == "libx264":
                stream.options = {**stream.options, "x264-params": "interlaced=1:tff=1"}
        flagged = TopFieldFirst(time_base) if interlaced else None
        for index, rgb in enumerate(frames_rgb):
            frame = _yuv(rgb, pix_fmt, colour)
            frame.time_base = time_base
            frame.pts = round(times[index] / time_base) if times is not None else index
            container.mux(stream.encode(flagged(frame) if flagged else frame))
        container.mux(stream.encode())
    return path


class TopFieldFirst:
    """FFmpeg's setfield=tff: frames flagged interlaced, top field first, as a decoder flags
    interlaced pictures (PyAV cannot set the flags itself). One graph per frame size."""

    def __init__(self, time_base):
        self.time_base, self.graph = time_base, None

    def __call__(self, frame: av.VideoFrame) -> av.VideoFrame:
        if self.graph is None:
            self.graph = av.filter.Graph()
            source = self.graph.add_buffer(template=frame, time_base=self.time_base)
            flag, sink = self.graph.add("setfield", "tff"), self.graph.add("buffersink")
            source.link_to(flag)
            flag.link_to(sink)
            self.graph.configure()
        self.graph.push(frame)
        return self.graph.pull()


def flagged_progressive(path, pictures: set[int]) -> str:
    """Marks pictures of an interlaced MPEG-2 elementary stream (.m2v, no B-frames) progressive,
    in place, as a broadcast that cuts between film and video does: their picture coding
    extension's progressive_frame (and chroma_420_type) bit set. Nothing else changes."""
    data = bytearray(pathlib.Path(path).read_bytes())
    start, index = 0, 0
    while (start := data.find(b"\x00\x00\x01\xb5", start) + 4) > 3:
        if data[start] >> 4 == 8:  # a picture coding extension: one per picture, in order
            if index in pictures:
                data[start + 3] |= 0x01  # chroma_420_type
                data[start + 4] |= 0x80  # progressive_frame
            index += 1
    pathlib.Path(path).write_bytes(bytes(data))
    return str(path)


def remuxed(source, path, fps: int = 25) -> str:
    """An elementary stream's pictures (no B-frames) in `path`'s container, 1/fps apart."""
    time_base = fractions.Fraction(1, fps)
    with av.open(str(source)) as reader, av.open(str(path), "w") as container:
        stream = container.add_stream_from_template(reader.streams.video[0])
        packets = (packet for packet in reader.demux(video=0) if packet.size)
        for index, packet in enumerate(packets):  # stamped in 1/fps; the muxer converts
            packet.stream, packet.time_base = stream, time_base
            packet.pts = packet.dts = index
            container.mux(packet)
    return str(path)


def woven(frames_rgb: np.ndarray) -> np.ndarray:
    """Interlaced pictures from progressive frames, as a camera shoots fields: picture k's top
    field (even rows) from frame 2k, its bottom field (odd rows) from frame 2k + 1."""
    pictures = frames_rgb[0 : len(frames_rgb) // 2 * 2 : 2].copy()
    pictures[:, 1::2] = frames_rgb[1::2, 1::2]
    return pictures


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


# -- UCF101 / HMDB51: XviD's packed B-frames in AVI ------------------------------------------------

VOP = b"\x00\x00\x01\xb6"  # an MPEG-4 Part 2 picture's start code


def packed_b_frames_avi(
    path, num_frames: int = 32, height: int = 64, width: int = 96, frames_rgb=None
) -> str:
    """An AVI as XviD/DivX 5 wrote UCF101 and HMDB51: MPEG-4 Part 2 with two B-frames per P,
    packed (a P shares its chunk with the first B that follows it in decode order; after the
    second B, a 6-byte not-coded VOP holds the P's place) and flagged so by DivX user data.

    FFmpeg decodes such files with pts 1, 2, 4, 3, 5, 7, 6, ... and dts in order. Frames are
    `frames_rgb` (default `synthetic.moving_frames`), shown at k / 25 s, an I-frame every 12.
    `num_frames` is 3k + 2 so that the last P has no B-frames after it (FFmpeg drops a packed
    B-frame left at the very end).
    """
    if frames_rgb is None:
        frames_rgb = synthetic.moving_frames(num_frames, height, width)
    num_frames, height, width = frames_rgb.shape[:3]
    assert num_frames % 3 == 2, "3k + 2 frames: the last picture a P without B-frames"
    plain = str(path) + ".plain.avi"
    with av.open(plain, "w") as container:
        stream = container.add_stream("mpeg4", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.max_b_frames = 2
        stream.bit_rate = 4_000_000  # near-transparent
        stream.options = {"g": "12"}
        for index, rgb in enumerate(frames_rgb):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    with av.open(plain) as source, av.open(str(path), "w") as container:
        stream = container.add_stream_from_template(source.streams.video[0])
        stream.codec_context.codec_tag = "XVID"
        packets = [(bytes(p), p.is_keyframe) for p in source.demux(video=0) if p.size]
        for index, (data, keyframe) in enumerate(_packed(packets)):
            packet = av.Packet(data)
            packet.stream, packet.time_base = stream, stream.time_base
            packet.pts = packet.dts = index
            packet.is_keyframe = keyframe
            container.mux(packet)
    pathlib.Path(plain).unlink()
    return str(path)


def _packed(packets: list[tuple[bytes, bool]]) -> list[tuple[bytes, bool]]:
    """Decode-order (data, keyframe) packets of I/P/B pictures as DivX 5 packs them in AVI."""
    kinds = [data[data.index(VOP) + 4] >> 6 for data, _ in packets]  # 0 I, 1 P, 2 B
    first, keyframe = packets[0]
    user_data = b"\x00\x00\x01\xb2"  # the "p" of DivX's build string: packed B-frames
    chunks = [(first.replace(user_data, user_data + b"DivX503b1393p" + user_data, 1), keyframe)]
    index = 1
    while index < len(packets):
        (reference, keyframe), after = packets[index], index + 1
        while after < len(packets) and kinds[after] == 2:
            after += 1
        b_frames = [data for data, _ in packets[index + 1 : after]]
        if b_frames:
            chunks.append((reference + b_frames[0], keyframe))
            chunks += [(data, False) for data in b_frames[1:]]
            chunks.append((_not_coded(reference), False))
        else:
            chunks.append((reference, keyframe))
        index = after
    return chunks


def _not_coded(reference: bytes, time_bits: int = 5) -> bytes:
    """A not-coded P-VOP with the timing of `reference`'s (its time increment in `time_bits`,
    5 for a 1/25 time base), byte-aligned by MPEG-4's stuffing (a 0, then 1s)."""
    start = reference.index(VOP) + 4
    bits = "".join(f"{byte:08b}" for byte in reference[start : start + 8])
    end = 2
    while bits[end] == "1":  # modulo_time_base: a 1 per second elapsed, then a 0
        end += 1
    end += 1 + 1 + time_bits + 1  # its 0, a marker, the time increment, a marker
    header = "01" + bits[2:end] + "0"  # P, the reference's timing, vop_coded = 0
    header += "0" + "1" * ((7 - len(header)) % 8)
    return VOP + int(header, 2).to_bytes(len(header) // 8, "big")


AVI_KEYFRAME = 0x10  # AVIIF_KEYFRAME: an idx1 entry's flag for a chunk that decodes on its own


def avi_index(path, out, keyframes: str) -> str:
    """A copy of an AVI whose idx1 misplaces the keyframes, as some muxers and cut files do:
    "none" (no entry flagged), "all" (every video entry flagged) or "no idx1" (the index
    renamed JUNK, a chunk players skip). The chunks themselves are unchanged."""
    data = bytearray(pathlib.Path(path).read_bytes())
    at = data.rfind(b"idx1")
    assert at > 0 and data[at - 4 : at] != b"LIST", "no idx1"
    if keyframes == "no idx1":
        data[at : at + 4] = b"JUNK"
    else:
        size = int.from_bytes(data[at + 4 : at + 8], "little")
        for entry in range(at + 8, at + 8 + size, 16):
            if data[entry + 2 : entry + 4] in (b"dc", b"db"):  # a video chunk's entry
                flags = int.from_bytes(data[entry + 4 : entry + 8], "little") & ~AVI_KEYFRAME
                flags |= AVI_KEYFRAME if keyframes == "all" else 0
                data[entry + 4 : entry + 8] = flags.to_bytes(4, "little")
    pathlib.Path(out).write_bytes(data)
    return str(out)


# -- several video streams ---------------------------------------------------------------------------


def two_streams(path, small_default: bool = False, cover: bool = False) -> str:
    """An mp4 with two H.264 streams: first 32x48 (seed 1), then 64x96 (seed 2), 10 frames each;
    the larger one has the default disposition (or the smaller, `small_default`). With `cover`,
    an MJPEG cover picture (attached_pic) is written, and moved to be the file's first stream."""
    sizes = {"small": (32, 48, 1), "large": (64, 96, 2)}
    with av.open(str(path), "w") as container:
        streams = {}
        for name, (height, width, _) in sizes.items():
            stream = container.add_stream("libx264", rate=25)
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            stream.options = QUALITY["libx264"]
            streams[name] = stream
        default = "small" if small_default else "large"
        for name, stream in streams.items():
            stream.disposition = av.stream.Disposition.default if name == default else 0
        if cover:
            picture = container.add_stream("mjpeg", rate=1)
            picture.width, picture.height, picture.pix_fmt = 40, 40, "yuvj420p"
            picture.disposition = av.stream.Disposition.attached_pic
            frame = av.VideoFrame.from_ndarray(np.full((40, 40, 3), 200, np.uint8), "rgb24")
            container.mux(picture.encode(frame.reformat(format="yuvj420p")))
            container.mux(picture.encode())
        frames = {n: synthetic.moving_frames(10, h, w, seed) for n, (h, w, seed) in sizes.items()}
        for index in range(10):
            for name, stream in streams.items():
                frame = av.VideoFrame.from_ndarray(frames[name][index], format="rgb24")
                frame.pts = index
                container.mux(stream.encode(frame))
        for stream in streams.values():
            container.mux(stream.encode())
    if cover:
        _cover_first(path)
    return str(path)


def _cover_first(path) -> None:
    """Moves the moov box's `udta` (which holds the cover) before its tracks, in place, so that
    FFmpeg's demuxer makes the cover picture stream 0. Sizes and media offsets do not change."""
    data = bytearray(pathlib.Path(path).read_bytes())
    moov = _boxes(data, 0, len(data))["moov"][0]
    children = list(_children(data, moov))
    udta = [c for c in children if data[c[0] + 4 : c[0] + 8] == b"udta"]
    others = [c for c in children if c not in udta]
    order = others[:1] + udta + others[1:]  # mvhd first, then udta, then the tracks
    body = b"".join(bytes(data[start:end]) for start, end in order)
    data[moov + 8 : moov + 8 + len(body)] = body
    pathlib.Path(path).write_bytes(bytes(data))


def _boxes(data, start: int, end: int) -> dict[str, list[int]]:
    """Offsets of the boxes between start and end, by type."""
    found = {}
    for offset, _ in _children_between(data, start, end):
        found.setdefault(data[offset + 4 : offset + 8].decode("latin-1"), []).append(offset)
    return found


def _children(data, box: int):
    """(start, end) of each child of the box at `box`."""
    return _children_between(data, box + 8, box + int.from_bytes(data[box : box + 4], "big"))


def _children_between(data, start: int, end: int):
    """(start, end) of each box between start and end (32-bit sizes only)."""
    while start + 8 <= end:
        size = int.from_bytes(data[start : start + 4], "big")
        yield start, start + size
        start += size


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


def reference(path, stream: int = 0, bwdif: bool = False) -> Decoded:
    """Every frame FFmpeg decodes from video stream `stream`, in FFmpeg's rgb24 (the stream's
    own matrix and range); with `bwdif`, through `ffmpeg -vf bwdif=mode=send_frame:deint=
    interlaced` (`bwdif_filtered`). Times are the frames' pts.

    Goes on past packets the decoder rejects, as `ffprobe -count_frames` does.
    """
    rgb, times, rotation = [], [], 0
    with av.open(str(path)) as container:
        chosen = container.streams.video[stream]
        chosen.codec_context.thread_count = 1
        frames = []
        for packet in container.demux(chosen):
            try:
                frames += chosen.codec_context.decode(packet if packet.size else None)
            except av.error.FFmpegError:
                pass
        shown = bwdif_filtered(frames, chosen.time_base) if bwdif else frames
        for frame, picture in zip(frames, shown, strict=True):
            rgb.append(to_rgb(picture, tags=frame))
            times.append(float(frame.pts * chosen.time_base))
            rotation = frame.rotation
    return Decoded(rgb, [t - times[0] for t in times], rotation)


def bwdif_filtered(frames: list[av.VideoFrame], time_base) -> list[av.VideoFrame]:
    """The frames through FFmpeg's bwdif in a filter graph, as `ffmpeg -vf bwdif=...` runs it:
    every frame pushed, then the end of stream, one output per input."""
    graph = av.filter.Graph()
    first = frames[0]
    source = graph.add_buffer(
        width=first.width, height=first.height, format=first.format, time_base=time_base
    )
    deinterlace = graph.add("bwdif", "mode=send_frame:deint=interlaced")
    sink = graph.add("buffersink")
    source.link_to(deinterlace)
    deinterlace.link_to(sink)
    graph.configure()
    out = []
    for frame in [*frames, None]:
        graph.push(frame)
        while True:
            try:
                out.append(graph.pull())
            except (BlockingIOError, av.error.EOFError):
                break
    return out


def decoded_frames(path) -> list[av.VideoFrame]:
    """The frames of the plainest PyAV decode loop, as they come out of FFmpeg."""
    with av.open(str(path)) as container:
        return list(container.decode(video=0))


def to_rgb(frame: av.VideoFrame, tags: av.VideoFrame | None = None) -> np.ndarray:
    """FFmpeg's rgb24 of a decoded frame, the matrix and range named explicitly from its tags
    (or from the decoded frame `tags` a filtered frame came from, as ffmpeg's filters keep)."""
    tags = tags or frame
    return frame.to_ndarray(
        format="rgb24",
        src_colorspace=SWS_MATRIX.get(tags.colorspace, Colorspace.DEFAULT),
        src_color_range=ColorRange(tags.color_range) if tags.color_range else None,
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


# -- audio with the frames ---------------------------------------------------------------------------

TONE_SECONDS = 0.03  # each burst: a 1 kHz tone at half of full scale, shorter than a frame
TONE_AMPLITUDE = 0.5


def flash_frame(index: int, flash: bool, height: int = 64, width: int = 96) -> np.ndarray:
    """An RGB frame: the top half white on a flash, dark grey otherwise; the bottom half the
    frame's index in 8 bits, a column of width / 8 px per bit (most significant first)."""
    frame = np.full((height, width, 3), 60, np.uint8)
    frame[: height // 2] = 255 if flash else 60
    column = width // 8
    for bit in range(8):
        on = index >> (7 - bit) & 1
        frame[height // 2 :, bit * column : (bit + 1) * column] = 230 if on else 20
    return frame


def marked_frames(num_frames: int, height: int = 64, width: int = 96, top: str = "flash"):
    """RGB frames [T, H, W, 3] carrying their index (`flash_frame`'s bottom half), the top half
    "flash" (white every 7th frame), "noise" (random each frame: pictures of several KB even
    at this size, a broadcast's, each starting its own MPEG program stream packet) or "motion"
    (`synthetic.moving_frames`: no scene cut, so an encoder's keyframes fall where its GOP says)."""
    frames = np.stack([flash_frame(i, i % 7 == 0, height, width) for i in range(num_frames)])
    half = (num_frames, height // 2, width, 3)
    if top == "noise":
        frames[:, : height // 2] = np.random.default_rng(0).integers(0, 256, half, np.uint8)
    elif top == "motion":
        frames[:, : height // 2] = synthetic.moving_frames(num_frames, height, width)[:, : half[1]]
    return frames


def frame_index(rgb: np.ndarray) -> int:
    """The index `flash_frame` wrote into a (decoded, maybe resized) frame."""
    height, width = rgb.shape[:2]
    rows = rgb[height * 5 // 8 : height * 7 // 8].mean(axis=(0, 2))
    column = width / 8
    bits = [rows[int(bit * column + column / 4) : int((bit + 1) * column - column / 4)].mean()
            for bit in range(8)]  # fmt: skip
    return int("".join("1" if b > 125 else "0" for b in bits), 2)


def is_flash(rgb: np.ndarray) -> bool:
    """Whether a decoded frame of `flash_frame` is a flash (its top half white)."""
    return rgb[: rgb.shape[0] // 2].mean() > 200


def tones(num_samples: int, rate: int, onsets: list[float], start: float = 0.0) -> np.ndarray:
    """float32 [num_samples]: silence with a burst of 1 kHz tone starting at each onset
    (seconds; sample i of the signal is at start + i / rate)."""
    times = start + np.arange(num_samples) / rate
    signal = np.zeros(num_samples, np.float32)
    for onset in onsets:
        inside = (times >= onset - 1e-9) & (times < onset + TONE_SECONDS)
        signal[inside] = TONE_AMPLITUDE * np.sin(2 * np.pi * 1000 * (times[inside] - onset))
    return signal


def flashes_and_tones(
    path, *, num_frames: int, flashes, fps: int = 25, audio_start: float = 0.5,
    audio_end: float | None = None, rate: int = 48000, codec: str = "aac", channels: int = 1,
    video_codec: str = "libx264",
) -> str:
    """An mp4 (or the container of `path`'s extension): H.264 frames at `fps` (`flash_frame`)
    that flash white at the frames `flashes`, and an audio stream (`codec`, `rate`) whose
    first sample plays at `audio_start` s and last before `audio_end` (default: the video's
    end), silent but for a tone burst starting exactly at each flash frame's time f / fps.
    `channels` 2: the same tone in both. `audio_start` None: no audio stream at all.
    """
    duration = num_frames / fps
    with av.open(str(path), "w") as container:
        video = container.add_stream(video_codec, rate=fps)
        video.width, video.height, video.pix_fmt = 96, 64, "yuv420p"
        video.options = QUALITY[video_codec]
        audio = None
        if audio_start is not None:
            audio = container.add_stream(codec, rate=rate)
            audio.layout = "mono" if channels == 1 else "stereo"
            audio.codec_context.time_base = fractions.Fraction(1, rate)
        for index in range(num_frames):
            frame = av.VideoFrame.from_ndarray(flash_frame(index, index in flashes), "rgb24")
            frame.pts = index
            container.mux(video.encode(frame))
        container.mux(video.encode())
        if audio is None:
            return str(path)
        first = round(audio_start * rate)
        count = round((duration if audio_end is None else audio_end) * rate) - first
        signal = tones(count, rate, [f / fps for f in flashes], start=first / rate)
        pcm = (np.tile(signal[None], (channels, 1)) * 32767).astype(np.int16)
        pcm = pcm.T.reshape(1, -1)  # packed: interleaved channels
        size = audio.codec_context.frame_size or 1024
        for at in range(0, count, size):
            chunk = np.ascontiguousarray(pcm[:, at * channels : (at + size) * channels])
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout=audio.layout.name)
            frame.sample_rate, frame.time_base = rate, fractions.Fraction(1, rate)
            frame.pts = first + at
            container.mux(audio.encode(frame))
        container.mux(audio.encode())
    return str(path)


def damaged_audio(path, out, packets: list[int]) -> str:
    """A copy of `path` (one video and one audio stream) whose audio packets `packets` (their
    order in the file) hold garbage instead of their data: a decoder rejects them."""
    garbage = np.random.default_rng(0)
    with av.open(str(path)) as source, av.open(str(out), "w") as container:
        streams = {s.index: container.add_stream_from_template(s) for s in source.streams}
        audio_index = source.streams.audio[0].index
        seen = 0
        for packet in source.demux():
            if packet.dts is None:
                continue
            if packet.stream.index == audio_index:
                if seen in packets:
                    damaged = av.Packet(garbage.bytes(packet.size))
                    damaged.pts, damaged.dts, damaged.time_base = packet.pts, packet.dts, packet.time_base
                    packet = damaged
                seen += 1
            packet.stream = streams[packet.stream.index if packet.stream else audio_index]
            container.mux(packet)
    return str(out)
