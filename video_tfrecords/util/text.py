"""Words for messages: counts with their noun, sizes in binary units, durations."""

from __future__ import annotations

__all__ = ["duration", "human_bytes", "plural"]


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


def duration(seconds: float) -> str:
    """75 -> '1 min 15 s', 5400 -> '1 h 30 min', for messages."""
    seconds = max(round(float(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"
