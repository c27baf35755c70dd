"""Drawing the pictures of `show` with OpenCV: scaled frames, titles, crop boxes, waveforms.

A tile is one view of one example: a title bar above its frames (side by side
on a sheet, one at a time in an animation) and, with audio, a waveform strip
below. Tiles are separated by GAP pixels of the background; frames of a tile
by FRAME_GAP. Images are RGB uint8.
"""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np

__all__ = [
    "BACKGROUND",
    "BOX_COLOURS",
    "FRAME_GAP",
    "GAP",
    "Tile",
    "animation_frames",
    "draw_box",
    "scaled",
    "sheet",
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
MIN_CELL_WIDTH = 160  # an animation's tiles: room for a readable title
_FONT, _SCALE, _LINE = cv2.FONT_HERSHEY_SIMPLEX, 0.4, 14


@dataclasses.dataclass
class Tile:
    """One view of one example, ready to lay out: its title and its (scaled) frames."""

    heading: list[str]  # the example's lines (class, file): a sheet shows them once
    title: list[str]  # the view's lines (times, frames, box)
    frames: np.ndarray  # uint8 [T, h, w, 3], boxes already drawn
    audio: np.ndarray | None = None  # float32 [S, channels], the view's window


def scaled(frames: np.ndarray, height: int | None) -> np.ndarray:
    """Frames [T, h, w, 3] at `height` rows (aspect kept): pixel copies when enlarged, so
    that a crop's pixels stay visible; area averages when reduced."""
    if height is None or height == frames.shape[1]:
        return frames
    width = max(1, round(frames.shape[2] * height / frames.shape[1]))
    method = cv2.INTER_NEAREST if height > frames.shape[1] else cv2.INTER_AREA
    return np.stack([cv2.resize(f, (width, height), interpolation=method) for f in frames])


def draw_box(frame: np.ndarray, box, colour, label: str = "") -> None:
    """A one-pixel rectangle on the border of `box` (y, x, h, w, in `frame`'s pixels), with
    `label` inside its top-left corner when the box has room for it."""
    y, x, h, w = (int(v) for v in box)
    bottom, right = y + max(h, 1) - 1, x + max(w, 1) - 1
    cv2.rectangle(frame, (x, y), (right, bottom), colour, 1, cv2.LINE_8)
    (text_w, text_h), _ = cv2.getTextSize(label, _FONT, _SCALE, 1)
    if label and text_w + 4 < w and text_h + 6 < h:
        cv2.putText(frame, label, (x + 2, y + 2 + text_h), _FONT, _SCALE, colour, 1, cv2.LINE_8)


def _wrapped(lines: list[str], width: int) -> list[str]:
    """The title's lines broken (at spaces when possible) to fit `width` pixels; ASCII only
    (OpenCV's fonts have no more)."""
    out = []
    for line in lines:
        line = line.encode("ascii", "replace").decode()
        while line:
            fit = len(line)
            while fit > 1 and cv2.getTextSize(line[:fit], _FONT, _SCALE, 1)[0][0] > width - 4:
                fit -= 1
            if fit < len(line) and " " in line[1:fit]:
                fit = line.rindex(" ", 1, fit) + 1  # break after a space
            out.append(line[:fit].rstrip())
            line = line[fit:]
    return out


def _title_bar(lines: list[str], width: int, rows: int | None = None) -> np.ndarray:
    rows = len(lines) if rows is None else rows
    bar = np.empty((rows * _LINE + 4, width, 3), np.uint8)
    bar[:] = TITLE_BACKGROUND
    for i, line in enumerate(lines[:rows]):
        cv2.putText(bar, line, (2, (i + 1) * _LINE), _FONT, _SCALE, TITLE_TEXT, 1, cv2.LINE_AA)
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


def _row(tile: Tile, heading: bool) -> np.ndarray:
    """A tile on a sheet: the title (after the heading, if asked), its frames side by side,
    the waveform under them all."""
    count, height, width = tile.frames.shape[:3]
    row = np.empty((height, count * width + (count - 1) * FRAME_GAP, 3), np.uint8)
    row[:] = BACKGROUND
    for i, frame in enumerate(tile.frames):
        row[:, i * (width + FRAME_GAP) : i * (width + FRAME_GAP) + width] = frame
    lines = [*tile.heading, *tile.title] if heading else tile.title
    parts = [_title_bar(_wrapped(lines, row.shape[1]), row.shape[1]), row]
    if tile.audio is not None:
        parts.append(_waveform(tile.audio, row.shape[1]))
    return np.concatenate(parts)


def sheet(tiles: list[Tile]) -> np.ndarray:
    """A contact sheet: one tile per row (title, frames side by side), GAP apart and around;
    an example's heading above its first tile only."""
    previous = [None, *(tile.heading for tile in tiles[:-1])]
    rows = [_row(tile, tile.heading != before) for tile, before in zip(tiles, previous)]
    width = max(row.shape[1] for row in rows) + 2 * GAP
    image = _canvas(sum(row.shape[0] for row in rows) + (len(rows) + 1) * GAP, width)
    top = GAP
    for row in rows:
        image[top : top + row.shape[0], GAP : GAP + row.shape[1]] = row
        top += row.shape[0] + GAP
    return image


def animation_frames(tiles: list[Tile], columns: int) -> list[np.ndarray]:
    """Images t = 0..T-1 of a grid of tiles (`columns` a row), each tile showing its frame t
    under its heading and title, with a cursor on its waveform; GAP apart and around."""
    cell_h = max(tile.frames.shape[1] for tile in tiles)
    cell_w = max(MIN_CELL_WIDTH, *(tile.frames.shape[2] for tile in tiles))
    titles = [_wrapped([*tile.heading, *tile.title], cell_w) for tile in tiles]
    title_rows = max(len(lines) for lines in titles)
    bars = [_title_bar(lines, cell_w, title_rows) for lines in titles]
    wave = WAVE_HEIGHT if any(tile.audio is not None for tile in tiles) else 0
    tile_h = bars[0].shape[0] + cell_h + wave
    rows = -(-len(tiles) // columns)
    width = columns * (cell_w + GAP) + GAP
    height = rows * (tile_h + GAP) + GAP
    count = max(len(tile.frames) for tile in tiles)
    images = []
    for t in range(count):
        image = _canvas(height, width)
        for i, (tile, bar) in enumerate(zip(tiles, bars)):
            top = GAP + (i // columns) * (tile_h + GAP)
            left = GAP + (i % columns) * (cell_w + GAP)
            frame = tile.frames[min(t, len(tile.frames) - 1)]
            image[top : top + bar.shape[0], left : left + cell_w] = bar
            y = top + bar.shape[0]
            image[y : y + frame.shape[0], left : left + frame.shape[1]] = frame
            if tile.audio is not None:
                strip = _waveform(tile.audio, cell_w, (t + 0.5) / len(tile.frames))
                image[y + cell_h : y + cell_h + wave, left : left + cell_w] = strip
        images.append(image)
    return images
