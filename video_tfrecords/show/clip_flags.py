"""Command-line flags for every `ClipSpec` field, made from the dataclass itself.

A clip argument added to `ClipSpec` becomes a flag here without editing `show`:
its help is the field's entry in ClipSpec's docstring, its value parsed by
`parse_value` (ints, floats, `a,b` pairs, true/false, none) and checked by
ClipSpec, whose error message the command line prints.
"""

from __future__ import annotations

import argparse
import dataclasses
import re

from video_tfrecords.clips.spec import ClipSpec

__all__ = ["DEFAULTS", "add_clip_flags", "clip_args", "field_docs", "parse_value"]

# Where the show command's defaults differ from ClipSpec's: num_frames has none there, and a
# seed makes a sheet reproducible (`--seed none`: one drawn at random, and printed).
DEFAULTS = {"num_frames": 8, "seed": 0}
NOTES = {"seed": "Here none draws a seed at random and prints it: the clip, its times and its "
         "boxes come from one draw."}  # fmt: skip


def field_docs() -> dict[str, str]:
    """Each field's description in ClipSpec's docstring ("Args:" section), on one line."""
    docs: dict[str, str] = {}
    name = None
    in_args = False
    for line in (ClipSpec.__doc__ or "").splitlines():
        if line.strip() == "Args:":
            in_args = True
            continue
        if not in_args:
            continue
        entry = re.match(r"^ {8}(\w+(?:, \w+)*): ?(.*)$", line)
        if entry:
            names, text = entry.group(1).split(", "), entry.group(2)
            for name in names:
                docs[name] = text
            name = names
        elif line.startswith(" " * 12) and name:
            for n in name:
                docs[n] = f"{docs[n]} {line.strip()}"
        elif line.strip():
            break  # the end of the Args section
    return docs


def _number(text: str):
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return float(text)


def parse_value(text: str):
    """A flag's text as a Python value: none, true/false, an int, a float, `a,b` (a tuple of
    numbers), else the text itself (a mode's name). ClipSpec checks the value."""
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered == "none":
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        if "," in stripped:
            return tuple(_number(part.strip()) for part in stripped.split(","))
        return _number(stripped)
    except ValueError:
        return stripped


def _bool(text: str) -> bool:
    value = parse_value(text)
    if not isinstance(value, bool):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value


def _shown(value) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) or value is None else str(value)


def add_clip_flags(parser: argparse.ArgumentParser) -> None:
    """One `--FIELD` flag per ClipSpec field, in a group of its own."""
    group = parser.add_argument_group(
        "clip arguments (ClipSpec's fields, as ClipSource takes them; pairs as a,b: "
        "--crop_size 224,224, --short_side 256,320, --stride 1,4; none for None)"
    )
    docs = field_docs()
    for field in dataclasses.fields(ClipSpec):
        default = DEFAULTS.get(field.name, field.default)
        if default is dataclasses.MISSING:
            default = None
        doc = docs.get(field.name, "").replace("%", "%%")
        note = NOTES.get(field.name, "").replace("%", "%%")
        text = f"{doc} {note} (default: {_shown(default)})".replace("  ", " ")
        if isinstance(field.default, bool):
            group.add_argument(
                f"--{field.name}", nargs="?", const=True, default=default, type=_bool,
                metavar="true|false", help=text,
            )  # fmt: skip
        else:
            group.add_argument(
                f"--{field.name}", default=default, type=parse_value, metavar="VALUE", help=text
            )


def clip_args(args: argparse.Namespace) -> dict:
    """The ClipSpec keyword arguments of parsed flags (every field, defaults included)."""
    return {field.name: getattr(args, field.name) for field in dataclasses.fields(ClipSpec)}
