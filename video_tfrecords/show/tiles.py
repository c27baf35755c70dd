"""Drawing the pictures of `show` with OpenCV: scaled frames, titles, crop boxes, waveforms.

A tile is one view of one example: a title bar above its frames (side by side
on a sheet, one at a time in an animation) and, with audio, a waveform strip
below. Tiles are separated by GAP pixels of the background; frames of a tile
by FRAME_GAP. Images are RGB uint8.

Legible by default: titles are drawn at a cap height of 11 px (the size of
16 px text, a browser's default), and without `--frame_height` the frames are
shrunk alike (never enlarged) until the picture fits SCREEN, so that a viewer shows
it at 100% on a laptop instead of shrinking its titles out of reading.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable

import cv2
import numpy as np

__all__ = [
    "BACKGROUND",
    "BOX_COLOURS",
    "FRAME_GAP",
    "GAP",
    "SCREEN",
    "Tile",
    "animation_frames",
    "animation_size",
    "ascii_text",
    "at_height",
    "at_scale",
    "draw_box",
    "fitting_scale",
    "scaled",
    "scaled_height",
    "sheet",
    "sheet_size",
    "text_width",
    "wrapped",
]

BACKGROUND = (255, 255, 255)
TITLE_BACKGROUND = (40, 40, 40)
TITLE_TEXT = (255, 255, 255)
WAVE_BACKGROUND = (24, 24, 24)
WAVE_COLOUR = (80, 220, 120)
CURSOR_COLOUR = (255, 80, 80)
# One colour per view's box: its lines are drawn in exactly this colour (findable pixel by
# pixel); its label's text is smoothed (OpenCV 5 smooths all text).
BOX_COLOURS = ((255, 0, 255), (0, 255, 255), (255, 255, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255))
GAP = 4  # pixels between tiles
FRAME_GAP = 2  # pixels between the frames of a tile on a sheet
WAVE_HEIGHT = 32
MIN_CELL_WIDTH = 200  # an animation's tiles: room for a readable title
# What a default picture fits in, (height, width): a 1600x900 laptop screen, or a viewer's
# window on a 1920x1080 one (its borders, a task bar); a 1366x768 screen shows it at 0.85.
SCREEN = (900, 1600)
MIN_FRAME_HEIGHT = 64  # a default picture shrinks its frames no further: it grows taller
# Hershey simplex at 0.5: capitals 11 px tall, about 7 px a character; a line every 18 px.
FONT, SCALE, LINE = cv2.FONT_HERSHEY_SIMPLEX, 0.5, 18


@dataclasses.dataclass
class Tile:
    """One view of one example, ready to lay out: its title, its frames, the boxes to draw."""

    heading: list[str]  # the example's lines (class, file): a sheet shows them once
    title: list[str]  # the view's lines (times, frames, box)
    frames: np.ndarray  # uint8 [T, h, w, 3]
    audio: np.ndarray | None = None  # float32 [S, channels], the view's window
    boxes: tuple = ()  # ((y, x, h, w) in the frames' pixels, colour, label): drawn at_height


def scaled(frames: np.ndarray, height: int | None) -> np.ndarray:
    """Frames [T, h, w, 3] at `height` rows (aspect kept): pixel copies when enlarged, so
    that a crop's pixels stay visible; area averages when reduced."""
    if height is None or height == frames.shape[1]:
        return frames
    width = max(1, round(frames.shape[2] * height / frames.shape[1]))
    method = cv2.INTER_NEAREST if height > frames.shape[1] else cv2.INTER_AREA
    return np.stack([cv2.resize(f, (width, height), interpolation=method) for f in frames])


def at_height(tile: Tile, height: int | None) -> Tile:
    """The tile with its frames `scaled` to `height` and its boxes drawn on them, one pixel
    wide at the shown size."""
    if not tile.boxes:
        return dataclasses.replace(tile, frames=scaled(tile.frames, height))
    frames = scaled(tile.frames, height).copy()
    (from_h, from_w), (to_h, to_w) = tile.frames.shape[1:3], frames.shape[1:3]
    for box, colour, label in tile.boxes:
        y0, x0 = round(box[0] * to_h / from_h), round(box[1] * to_w / from_w)
        y1, x1 = round((box[0] + box[2]) * to_h / from_h), round((box[1] + box[3]) * to_w / from_w)
        for frame in frames:
            draw_box(frame, (y0, x0, max(y1 - y0, 1), max(x1 - x0, 1)), colour, label)
    return dataclasses.replace(tile, frames=frames, boxes=())


def draw_box(frame: np.ndarray, box, colour, label: str = "") -> None:
    """A one-pixel rectangle on the border of `box` (y, x, h, w, in `frame`'s pixels), with
    `label` inside its top-left corner when the box has room for it."""
    y, x, h, w = (int(v) for v in box)
    bottom, right = y + max(h, 1) - 1, x + max(w, 1) - 1
    cv2.rectangle(frame, (x, y), (right, bottom), colour, 1, cv2.LINE_8)
    (text_w, text_h), _ = cv2.getTextSize(label, FONT, SCALE, 1)
    if label and text_w + 4 < w and text_h + 6 < h:
        cv2.putText(frame, label, (x + 2, y + 2 + text_h), FONT, SCALE, colour, 1, cv2.LINE_8)


def ascii_text(text: str) -> str:
    """`text` in the characters OpenCV's fonts have: accents dropped (naive), else '?'."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.encode("ascii", "replace").decode()


def text_width(text: str, scale: float = SCALE) -> int:
    return cv2.getTextSize(text, FONT, scale, 1)[0][0]


def wrapped(lines: list[str], width: int, scale: float = SCALE) -> list[str]:
    """The lines broken (after a space when possible) to fit `width` pixels, in ASCII
    (`ascii_text`)."""
    out = []
    for line in lines:
        line = ascii_text(line)
        while line:
            fit = len(line)
            if text_width(line, scale) > width - 4:  # the longest start that fits, by halves
                low, high = 1, len(line) - 1
                while low < high:
                    middle = (low + high + 1) // 2
                    if text_width(line[:middle], scale) <= width - 4:
                        low = middle
                    else:
                        high = middle - 1
                fit = low
            if fit < len(line) and " " in line[1:fit + 1]:
                fit = line.rindex(" ", 1, fit + 1) + 1  # break after a space
            out.append(line[:fit].rstrip())
            line = line[fit:]
    return out


def _title_bar(lines: list[str], width: int, rows: int | None = None) -> np.ndarray:
    rows = len(lines) if rows is None else rows
    bar = np.empty((rows * LINE + 4, width, 3), np.uint8)
    bar[:] = TITLE_BACKGROUND
    for i, line in enumerate(lines[:rows]):
        cv2.putText(bar, line, (2, (i + 1) * LINE), FONT, SCALE, TITLE_TEXT, 1, cv2.LINE_AA)
    return bar


def _waveform(samples: np.ndarray, width: int, cursor: float | None = None) -> np.ndarray:
    """A strip of the window's peaks per pixel column (channels mixed); with `cursor` (0-1),
    a line where the shown frame is."""
    strip = np.empty((WAVE_HEIGHT, width, 3), np.uint8)
    strip[:] = WAVE_BACKGROUND
    mono = samples.mean(axis=1) if samples.ndim == 2 else samples
    middle = (WAVE_HEIGHT - 1) / 2
    if len(mono):
        edges = np.linspace(0, len(mono), width + 1).astype(int)
        for column in range(width):
            part = mono[edges[column] : max(edges[column + 1], edges[column] + 1)]
            top = round(middle - float(np.clip(part.max(), -1, 1)) * middle)
            bottom = round(middle - float(np.clip(part.min(), -1, 1)) * middle)
            strip[top : bottom + 1, column] = WAVE_COLOUR
    if cursor is not None:
        strip[:, min(width - 1, int(cursor * width))] = CURSOR_COLOUR
    return strip


def _canvas(height: int, width: int) -> np.ndarray:
    canvas = np.empty((height, width, 3), np.uint8)
    canvas[:] = BACKGROUND
    return canvas


def scaled_height(tile: Tile, scale: float | None) -> int | None:
    """The height of the tile's frames `scale` times as tall (None: as they are)."""
    return None if scale is None else max(1, round(tile.frames.shape[1] * scale))


def at_scale(tile: Tile, scale: float | None) -> Tile:
    """`at_height` the tile's frames `scale` times as tall (`fitting_scale`)."""
    return at_height(tile, scaled_height(tile, scale))


def _shape(tile: Tile, scale: float | None) -> tuple[int, int, int]:
    """(frames, height, width) of the tile's frames `at_scale(scale)`."""
    count, rows, columns = tile.frames.shape[:3]
    height = scaled_height(tile, scale)
    if height is None or height == rows:
        return count, rows, columns
    return count, height, max(1, round(columns * height / rows))


def _sheet_rows(tiles: list[Tile], scale: float | None = None) -> list[tuple[list[str], int, int]]:
    """Each tile's row on a sheet, its frames `at_scale`: (title lines, width, height)."""
    previous = [None, *(tile.heading for tile in tiles[:-1])]
    rows = []
    for tile, before in zip(tiles, previous):
        count, rows_h, columns = _shape(tile, scale)
        width = count * columns + (count - 1) * FRAME_GAP
        lines = wrapped([*tile.heading, *tile.title] if tile.heading != before else tile.title,
                        width)  # fmt: skip
        wave = WAVE_HEIGHT if tile.audio is not None else 0
        rows.append((lines, width, len(lines) * LINE + 4 + rows_h + wave))
    return rows


def sheet_size(tiles: list[Tile], scale: float | None = None) -> tuple[int, int]:
    """(height, width) of the `sheet` of the tiles `at_scale(scale)`, without drawing it."""
    rows = _sheet_rows(tiles, scale)
    return (
        sum(h for _, _, h in rows) + (len(rows) + 1) * GAP,
        max(w for _, w, _ in rows) + 2 * GAP,
    )


def sheet(tiles: list[Tile]) -> np.ndarray:
    """A contact sheet: one tile per row (title, frames side by side, the waveform under them
    all), GAP apart and around; an example's heading above its first tile only."""
    rows = _sheet_rows(tiles)
    height, width = sheet_size(tiles)
    image = _canvas(height, width)
    top = GAP
    for tile, (lines, row_width, row_height) in zip(tiles, rows):
        parts = [_title_bar(lines, row_width)]
        strip = np.empty((tile.frames.shape[1], row_width, 3), np.uint8)
        strip[:] = BACKGROUND
        step = tile.frames.shape[2] + FRAME_GAP
        for i, frame in enumerate(tile.frames):
            strip[:, i * step : i * step + frame.shape[1]] = frame
        parts.append(strip)
        if tile.audio is not None:
            parts.append(_waveform(tile.audio, row_width))
        image[top : top + row_height, GAP : GAP + row_width] = np.concatenate(parts)
        top += row_height + GAP
    return image


@dataclasses.dataclass(frozen=True)
class _Grid:
    """An animation's layout: every cell the same size, titles padded to as many lines."""

    titles: list[list[str]]
    title_rows: int
    cell: tuple[int, int]  # the frame's room, (height, width)
    wave: int
    columns: int
    size: tuple[int, int]  # the image's (height, width)

    @property
    def tile_height(self) -> int:
        return self.title_rows * LINE + 4 + self.cell[0] + self.wave


def _grid(tiles: list[Tile], columns: int, scale: float | None = None) -> _Grid:
    shapes = [_shape(tile, scale) for tile in tiles]
    cell = (max(s[1] for s in shapes), max(MIN_CELL_WIDTH, *(s[2] for s in shapes)))
    titles = [wrapped([*tile.heading, *tile.title], cell[1]) for tile in tiles]
    title_rows = max(len(lines) for lines in titles)
    wave = WAVE_HEIGHT if any(tile.audio is not None for tile in tiles) else 0
    rows = -(-len(tiles) // columns)
    tile_h = title_rows * LINE + 4 + cell[0] + wave
    size = (rows * (tile_h + GAP) + GAP, columns * (cell[1] + GAP) + GAP)
    return _Grid(titles, title_rows, cell, wave, columns, size)


def animation_size(tiles: list[Tile], columns: int, scale: float | None = None) -> tuple[int, int]:
    """(height, width) of the `animation_frames` of the tiles `at_scale(scale)`."""
    return _grid(tiles, columns, scale).size


def animation_frames(tiles: list[Tile], columns: int) -> list[np.ndarray]:
    """Images t = 0..T-1 of a grid of tiles (`columns` a row), each tile showing its frame t
    under its heading and title, with a cursor on its waveform; GAP apart and around."""
    grid = _grid(tiles, columns)
    cell_h, cell_w = grid.cell
    bars = [_title_bar(lines, cell_w, grid.title_rows) for lines in grid.titles]
    count = max(len(tile.frames) for tile in tiles)
    images = []
    for t in range(count):
        image = _canvas(*grid.size)
        for i, (tile, bar) in enumerate(zip(tiles, bars)):
            top = GAP + (i // columns) * (grid.tile_height + GAP)
            left = GAP + (i % columns) * (cell_w + GAP)
            frame = tile.frames[min(t, len(tile.frames) - 1)]
            image[top : top + bar.shape[0], left : left + cell_w] = bar
            y = top + bar.shape[0]
            image[y : y + frame.shape[0], left : left + frame.shape[1]] = frame
            if tile.audio is not None:
                strip = _waveform(tile.audio, cell_w, (t + 0.5) / len(tile.frames))
                image[y + cell_h : y + cell_h + grid.wave, left : left + cell_w] = strip
        images.append(image)
    return images


def fitting_scale(
    tiles: list[Tile], size: Callable[[list[Tile], float | None], tuple[int, int]],
    screen: tuple[int, int] = SCREEN,
) -> float | None:  # fmt: skip
    """How much a default picture shrinks its frames (all alike): None (as decoded) if
    `size(tiles, None)` fits `screen`; else the least, in steps of a pixel of the tallest
    frames, that makes it fit, and no further than frames MIN_FRAME_HEIGHT tall (many tiles:
    then it grows taller than the screen)."""
    fits = lambda scale: all(s <= limit for s, limit in zip(size(tiles, scale), screen))
    tallest = max(tile.frames.shape[1] for tile in tiles)
    if fits(None) or tallest <= MIN_FRAME_HEIGHT:
        return None
    low, high = MIN_FRAME_HEIGHT, tallest  # the tallest frames' height: halve the range
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle / tallest) else (low, middle - 1)
    return low / tallest
