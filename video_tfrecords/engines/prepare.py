"""A build's steps on every engine, in one place: a prepared dataset checked (and kept) or
started over, the manifests read into a `BuildRun`, the engine's write, the cache trimmed, the
summary. The TFDS builder (local, Beam) and `grouped.build` (Spark, any map) both call
`prepare`, each with its own `write`.

The driver asks of a builder only what `Target` names: TFDS's `data_path` and `info`, the
config a build runs with, and the two calls that make its info store what the manifests
annotate (`Builder.start_over`, `Builder.use_manifests`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Protocol

from etils import epath

from video_tfrecords.ingest import provenance
from video_tfrecords.ingest.run import BuildRun

__all__ = ["Target", "prepare"]

# An engine's build of the dataset: the examples written per split, or None if it built nothing.
Write = Callable[[BuildRun], "Mapping[str, int] | None"]


class Target(Protocol):
    """What `prepare` uses of a video_tfrecords builder."""

    data_path: epath.Path
    info: object  # tfds.core.DatasetInfo
    build_config: object  # config.VideoConfig

    def start_over(self, manual_dir: epath.PathLike) -> None: ...

    def use_manifests(self, manual_dir: epath.PathLike) -> None: ...


def prepare(
    target: Target,
    manual_dir: epath.PathLike,
    write: Write,
    *,
    overwrite: bool,
    ways: Mapping,
) -> str | None:
    """Builds `target`'s dataset from the manifests of `manual_dir` with the engine's `write`;
    returns the build's summary, or None when nothing was built.

    A dataset already prepared is kept once compared with the inputs (a line printed), or
    refused (`provenance.StaleDatasetError`, naming each change and the `ways` on) before
    anything is decoded. `overwrite` rebuilds it: its info made anew from the manifests, and
    its `built_from` (`provenance.read`) read first, so unchanged videos come back from
    the kept cache."""
    folder = epath.Path(target.data_path)
    prepared = (folder / "dataset_info.json").exists()
    if prepared and not overwrite:
        run = BuildRun(target.info, target.build_config)
        line, warning = run.check_prepared(folder, manual_dir, ways)
        print(line, file=sys.stderr if warning else sys.stdout)
        return None
    previous = None
    if prepared:
        target.start_over(manual_dir)  # the rebuild's info, not the old dataset's
        previous = provenance.read(folder)  # before the engine removes the old dataset
    target.use_manifests(manual_dir)  # the features store what the manifests annotate
    run = BuildRun(target.info, target.build_config, previous)
    examples = write(run)
    if examples is None:
        return None
    run.remove_cache()
    return run.summary(folder, examples)
