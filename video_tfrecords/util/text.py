"""Words for messages: counts with their noun, sizes in binary units."""

from __future__ import annotations

__all__ = ["human_bytes", "plural"]


def plural(number: int, noun: str) -> str:
    """'1 video', '2 videos'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def human_bytes(size: float) -> str:
    """1536 -> '1.5 KiB', for messages."""
    unit = "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            break
        size /= 1024
    return f"{size:.1f} {unit}"
