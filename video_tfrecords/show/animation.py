"""Writing a list of RGB images as an animated GIF or an MP4, with PyAV (FFmpeg's encoders).

GIF holds 256 colours: one palette serves every image, the drawing's own
colours (`tiles`: boxes, titles, waveforms) kept exact and the rest chosen by
k-means over the images' pixels; each pixel takes the nearest palette colour
(through a 32x32x32 table). MP4 is H.264 (yuv420p, so the images are padded
to even sizes).
"""

from __future__ import annotations

import fractions

import av
import cv2
import numpy as np

from video_tfrecords.show import tiles

__all__ = ["FORMATS", "palette_of", "write_animation"]

FORMATS = ("gif", "mp4")
_FIXED = (
    (0, 0, 0),
    tiles.BACKGROUND,
    tiles.TITLE_BACKGROUND,
    tiles.TITLE_TEXT,
    tiles.WAVE_BACKGROUND,
    tiles.WAVE_COLOUR,
    tiles.CURSOR_COLOUR,
    *tiles.BOX_COLOURS,
)
_SAMPLES = 100_000  # pixels the k-means sees


def palette_of(images: list[np.ndarray], seed: int = 0) -> np.ndarray:
    """uint8 [256, 3]: the fixed drawing colours, then k-means centres of the images' pixels."""
    fixed = np.unique(np.array(_FIXED, np.uint8), axis=0)
    pixels = np.concatenate([image.reshape(-1, 3) for image in images])
    rng = np.random.default_rng(seed)
    if len(pixels) > _SAMPLES:
        pixels = pixels[rng.choice(len(pixels), _SAMPLES, replace=False)]
    distinct = np.unique(pixels, axis=0)
    free = 256 - len(fixed)
    if len(distinct) <= free:
        centres = distinct
    else:
        cv2.setRNGSeed(seed)
        criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 10, 1.0)
        _, _, centres = cv2.kmeans(
            pixels.astype(np.float32), free, None, criteria, 1, cv2.KMEANS_PP_CENTERS
        )
        centres = np.clip(np.rint(centres), 0, 255).astype(np.uint8)
    palette = np.zeros((256, 3), np.uint8)
    palette[: len(fixed)] = fixed
    palette[len(fixed) : len(fixed) + len(centres)] = centres
    return palette


def _indexed(image: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Each pixel's palette index, looked up by its colour's top 5 bits per channel."""
    q = (image >> 3).astype(np.int32)
    return table[q[..., 0] * 1024 + q[..., 1] * 32 + q[..., 2]]


def _nearest_table(palette: np.ndarray) -> np.ndarray:
    """uint8 [32768]: the nearest palette entry to the centre of each 5-bit colour cell; a
    drawing colour (exact in the palette) wins its own cell."""
    levels = np.arange(32) * 8 + 4
    cells = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), -1).reshape(-1, 3)
    table = np.empty(len(cells), np.uint8)
    colours = palette.astype(np.int32)
    for start in range(0, len(cells), 4096):
        part = cells[start : start + 4096, None, :] - colours[None]
        table[start : start + 4096] = np.argmin((part * part).sum(-1), axis=1)
    for index, colour in enumerate(palette[: len(_FIXED)]):
        table[_indexed(colour[None, None], np.arange(32768))[0, 0]] = index
    return table


def _write_gif(path: str, images: list[np.ndarray], rate: fractions.Fraction) -> None:
    palette = palette_of(images)
    table = _nearest_table(palette)
    argb = np.concatenate([np.full((256, 1), 255, np.uint8), palette], axis=1)
    height, width = images[0].shape[:2]
    with av.open(path, "w", format="gif") as container:
        stream = container.add_stream("gif", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "pal8"
        for index, image in enumerate(images):
            frame = av.VideoFrame.from_ndarray((_indexed(image, table), argb), format="pal8")
            frame.pts, frame.time_base = index, 1 / rate
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def _write_mp4(path: str, images: list[np.ndarray], rate: fractions.Fraction) -> None:
    height, width = images[0].shape[:2]
    even_h, even_w = height + height % 2, width + width % 2
    with av.open(path, "w") as container:
        stream = container.add_stream("libx264", rate=rate, options={"crf": "18"})
        stream.width, stream.height, stream.pix_fmt = even_w, even_h, "yuv420p"
        for image in images:
            padded = np.pad(image, ((0, even_h - height), (0, even_w - width), (0, 0)), "edge")
            container.mux(stream.encode(av.VideoFrame.from_ndarray(padded, format="rgb24")))
        container.mux(stream.encode(None))


def write_animation(path: str, images: list[np.ndarray], fps: float) -> None:
    """Writes the images (RGB uint8, one size) to `path` (.gif or .mp4), `fps` a second."""
    rate = fractions.Fraction(fps).limit_denominator(1000)
    kind = path.rsplit(".", 1)[-1].lower()
    if kind == "gif":
        _write_gif(path, images, rate)
    elif kind == "mp4":
        _write_mp4(path, images, rate)
    else:
        raise ValueError(f"{path}: an animation is written as {' or '.join(FORMATS)}.")
