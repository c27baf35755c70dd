"""Storage against quality: JPEG q75-q95, with and without optimized Huffman tables, real footage.

The reference and the encoders' input: each frame of bikes.mp4 and bigbuckbunny.mp4 decoded by
FFmpeg and area-resized to the stored size. Bytes per frame and PSNR of JPEG (OpenCV, as the
builder), of H.264 at the stored size, the mp4 and raw frames; then what optimized tables cost on
one pinned core (decoding, with identical pixels; encoding; the build's per-frame work).
"""

from __future__ import annotations

import os
import statistics
from functools import partial

import cv2
import numpy as np

import timing
import video_sets
from builds import stored_size
from timing import arguments, cpu_time, interleave, log, median, ratio, table

QUALITIES = (75, 85, 90, 95)


def reference_frames(path: str, limit: int | None) -> np.ndarray:
    """FFmpeg's decode of the clip, area-resized to the stored size, BGR uint8 [T, H, W, 3]."""
    rgb = video_sets.read_rgb(path)[:limit]
    height, width = stored_size(*rgb.shape[1:3], 256)  # the `default` config's short side
    size = (width, height)
    return np.stack([cv2.resize(f[..., ::-1], size, interpolation=cv2.INTER_AREA) for f in rgb])


def jpeg_params(quality: int, optimize: bool) -> list[int]:
    """OpenCV imencode parameters."""
    return [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_OPTIMIZE, int(optimize)]


def encode_all(frames: np.ndarray, quality: int, optimize: bool) -> list[bytes]:
    """Every frame as JPEG bytes."""
    params = jpeg_params(quality, optimize)
    return [cv2.imencode(".jpg", f, params)[1].tobytes() for f in frames]


def psnr(decoded: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(PSNR over all frames, worst frame's PSNR), dB."""
    errors = [np.mean((d.astype(np.float64) - r) ** 2) for d, r in zip(decoded, reference)]
    to_db = lambda mse: 10 * np.log10(255.0**2 / max(mse, 1e-12))
    return to_db(np.mean(errors)), min(map(to_db, errors))


def decode_all(encoded: list[bytes]) -> np.ndarray:
    """OpenCV decode of JPEG bytes, BGR."""
    return np.stack([cv2.imdecode(np.frombuffer(e, np.uint8), cv2.IMREAD_COLOR) for e in encoded])


def decode_each(encoded: list[bytes]) -> None:
    """OpenCV decode of every frame, each result dropped (times the decode, not a stack copy)."""
    for data in encoded:
        cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def h264_roundtrip(frames: np.ndarray, folder: str, name: str) -> tuple[float, float, float]:
    """(bytes per frame, PSNR, worst frame's PSNR) of the frames as libx264 CRF 23 preset medium.
    4:2:0 needs even sizes: an odd last row or column is left out of both sides."""
    height, width = (s - s % 2 for s in frames.shape[1:3])
    frames = frames[:, :height, :width]
    path = os.path.join(folder, f"{name}.stored.mp4")
    video_sets.write_h264(path, np.ascontiguousarray(frames[..., ::-1]), gop=250)
    decoded = video_sets.read_rgb(path)[..., ::-1]
    return (os.path.getsize(path) / len(frames), *psnr(decoded, frames))


def storage_rows(name: str, source_path: str, frames: np.ndarray, folder: str) -> list[list]:
    """Rows of one clip: every format's bytes per frame and PSNR."""
    height, width = frames.shape[1:3]
    raw = height * width * 3
    formats = []
    for q in QUALITIES:
        for optimize in (False, True):
            encoded = encode_all(frames, q, optimize)
            what = f"JPEG q{q}" + (", optimized Huffman tables" if optimize else "")
            size = statistics.mean(map(len, encoded))
            formats.append((what, size, *psnr(decode_all(encoded), frames)))
    h264 = "H.264 at the stored size, libx264 CRF 23 (Kinetics-style)"
    formats.append((h264, *h264_roundtrip(frames, folder, name)))
    source = video_sets.read_rgb(source_path)
    shipped = f"the source mp4 as shipped ({source.shape[2]}x{source.shape[1]})"
    formats.append((shipped, os.path.getsize(source_path) / len(source), "(source)"))
    formats.append(("raw uint8", raw, "lossless"))
    rows = []
    for what, size, *quality in formats:
        if len(quality) == 2:
            quality = [f"{quality[0]:.2f} (worst frame {quality[1]:.2f})"]
        footage = f"{name} ({width}x{height})"
        rows.append([footage, what, f"{size:,.0f}", f"{size / raw:.4f}", *quality])
    return rows


def tf_decoder():
    """A graph decoding a 1-D string tensor of JPEGs one after the other, as ClipDecoder's ops."""
    import tensorflow as tf

    @tf.function
    def decode(frames):
        decode_one = lambda f: tf.io.decode_jpeg(f, channels=3, dct_method="INTEGER_ACCURATE")
        return tf.map_fn(decode_one, frames, fn_output_signature=tf.uint8, parallel_iterations=1)

    return lambda encoded: decode(tf.constant(encoded)).numpy()


def build_work(path: str, size: tuple[int, int], limit: int | None, optimize: bool) -> None:
    """The build's work on one video: FFmpeg decode, resize to the stored size, q90 JPEG encode."""
    import av

    height, width = size
    with av.open(path) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index == limit:
                break
            bgr = frame.to_ndarray(format="bgr24")
            bgr = cv2.resize(bgr, (width, height), interpolation=cv2.INTER_AREA)
            cv2.imencode(".jpg", bgr, jpeg_params(90, optimize))


def speed_rows(frames: np.ndarray, path: str, limit: int | None, rounds: int) -> list[list]:
    """Rows: CPU ms per frame of decoding, encoding and the build's work on one video, standard
    against optimized tables."""
    standard, optimized = encode_all(frames, 90, False), encode_all(frames, 90, True)
    if not np.array_equal(decode_all(standard), decode_all(optimized)):
        raise RuntimeError("optimized Huffman tables changed the decoded pixels")
    tf_decode = tf_decoder()
    tf_decode(standard[:2])  # traces the graph
    work = "build's work: FFmpeg decode + resize + imencode"
    measures = {
        ("TF decode_jpeg", False): partial(tf_decode, standard),
        ("TF decode_jpeg", True): partial(tf_decode, optimized),
        ("OpenCV imdecode", False): partial(decode_each, standard),
        ("OpenCV imdecode", True): partial(decode_each, optimized),
        ("OpenCV imencode (build)", False): partial(encode_all, frames, 90, False),
        ("OpenCV imencode (build)", True): partial(encode_all, frames, 90, True),
        (work, False): partial(build_work, path, frames.shape[1:3], limit, False),
        (work, True): partial(build_work, path, frames.shape[1:3], limit, True),
    }
    for measure in measures.values():  # warm-up: allocators, caches, the TF graph
        measure()

    per_frame = lambda measure: lambda: cpu_time(measure) / len(frames)
    times = interleave({key: per_frame(measure) for key, measure in measures.items()}, rounds)
    rows = []
    for what in dict.fromkeys(key[0] for key in measures):
        plain, tables = times[(what, False)], times[(what, True)]
        ms = [f"{median(plain) * 1e3:.3f}", f"{median(tables) * 1e3:.3f}"]
        rows.append([what, *ms, ratio(tables, plain)])
    return rows


def main() -> None:
    """Measures every clip's storage rows, then the speed rows on bikes.mp4; prints tables."""
    args = arguments(__doc__, "real", rounds=9).parse_args()
    limit = 24 if args.quick else None
    timing.one_core(args.cpu, tensorflow=True)
    members = [video_sets.BIKES] if args.quick else [video_sets.BIKES, video_sets.BUNNY]
    clips = {}
    for member in members:
        path = video_sets.fetch_clip(args.out, member)
        clips[os.path.basename(path)] = (path, reference_frames(path, limit))
    header = ["footage (stored size)", "format", "bytes per frame", "of raw", "PSNR dB"]
    rows = []
    for name, (path, frames) in clips.items():
        log(f"storage: {name}")
        rows += storage_rows(name, path, frames, args.out)
    path, frames = clips["bikes.mp4"]
    speed = ["operation", "standard tables", "optimized tables", "optimized / standard time"]
    print("\n".join([
        "Bytes per stored frame and PSNR against FFmpeg's decode of the source, resized to the "
        "stored size (short side 256):", "", *table(header, rows), "",
        f"Optimized Huffman tables, q90, bikes.mp4 ({frames.shape[2]}x{frames.shape[1]}, "
        f"{len(frames)} frames): CPU ms per frame on one core, median of {args.rounds} "
        "interleaved rounds (decoded pixels identical):", "",
        *table(speed, speed_rows(frames, path, limit, args.rounds)),
    ]))  # fmt: skip


if __name__ == "__main__":
    main()
