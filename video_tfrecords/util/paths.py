"""Paths as etils.epath takes them: local folders or URLs of remote file systems."""

from __future__ import annotations

__all__ = ["is_remote"]


def is_remote(path: str) -> bool:
    """Whether `path` is a URL of a remote file system (gs://, s3://...), not a local path."""
    return "://" in path
