"""JSON annotation files read item by item, each with the line it starts on.

json.load gives no line numbers, and an error should name FILE:LINE. In a one-line
(minified) file every line is 1, so messages name the item's key as well.
"""

from __future__ import annotations

import json
import re

_SPACE = re.compile(r"\s*")


def read_text(path: str, problems: list[str]) -> str | None:
    """The file's text (a BOM dropped), or None with the reason in `problems`."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.read()
    except UnicodeDecodeError as e:
        problems.append(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")
    except OSError as e:
        problems.append(f"{path}: cannot be read ({e.strerror})")
    return None


def json_items(path: str, problems: list[str], within: str | None = None) -> list[tuple]:
    """(line, key or index, value) of each item of the file's top-level list or object, or,
    with `within`, of the container under that key of the top-level object."""
    text = read_text(path, problems)
    if text is None:
        return []
    decoder, items, line, counted = json.JSONDecoder(), [], 1, 0

    def line_at(pos: int) -> int:
        nonlocal line, counted
        line, counted = line + text.count("\n", counted, pos), pos
        return line

    def members(pos: int, descend: str | None):
        """The items of the container at `pos`; with `descend`, those under that key."""
        if text[pos : pos + 1] not in ("[", "{"):
            raise json.JSONDecodeError("expected a JSON list or object", text, pos)
        close = "]" if text[pos] == "[" else "}"
        pos, index = _SPACE.match(text, pos + 1).end(), 0
        while text[pos : pos + 1] != close:
            start, key = pos, index
            if close == "}":
                key, pos = decoder.raw_decode(text, pos)
                pos = _SPACE.match(text, pos).end()
                if not isinstance(key, str) or text[pos : pos + 1] != ":":
                    raise json.JSONDecodeError("expected a key and ':'", text, pos)
                pos = _SPACE.match(text, pos + 1).end()
            if descend is not None and key == descend:
                return members(pos, None)
            value, pos = decoder.raw_decode(text, pos)
            if descend is None:
                items.append((line_at(start), key, value))
            pos, index = _SPACE.match(text, pos).end(), index + 1
            if text[pos : pos + 1] == ",":
                pos = _SPACE.match(text, pos + 1).end()
            elif text[pos : pos + 1] != close:
                raise json.JSONDecodeError(f"expected ',' or '{close}'", text, pos)
        if descend is not None:
            raise KeyError(descend)
        return items

    try:
        return members(_SPACE.match(text).end(), within)
    except json.JSONDecodeError as e:
        problems.append(f"{path}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno})")
    except KeyError:
        problems.append(f'{path}: no "{within}" in the top-level object')
    return []
