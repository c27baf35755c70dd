"""One build's plan and records: the seam every engine (local, Beam, Spark) builds through.

`BuildRun.plan` turns the manual dir's manifests into one `encoding.Task` per line;
an engine encodes them its own way and hands each `encoding.Outcome` to `record`;
`check_records` closes the records (skip records and notes, in `info.metadata`);
`summary` is what the user reads at the end, and `remove_cache` the clean-up after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from etils import epath

from video_tfrecords.ingest import cache, encoding, manifest, summary

__all__ = ["MANUAL_INSTRUCTIONS", "BuildRun"]

MANUAL_INSTRUCTIONS = """\
Put into the manual dir (`--manual_dir=DIR`) one manifest per split you want:
  train.txt            -> split "train"
  val.txt              -> split "validation" (validation.txt is accepted too)
  test.txt             -> split "test"
Each line is `{video path} {label}`, e.g. `videos/54838.mp4 1951` or
`clips/rock climbing 01.mp4 abseiling`. The path is relative to the manual dir
or absolute and may contain spaces (the label is the last field). Labels are
class names or integer class ids. Blank lines and lines starting with # are
ignored. Optionally add labels.txt: one class name per line, line i = id i.
"""


class BuildRun:
    """A build of one config: its tasks by split, where its encoded videos are cached, and the
    skip records and notes it keeps in the dataset's `metadata` (TFDS's `info.metadata`)."""

    def __init__(self, info, config) -> None:
        """`info`: the builder's `tfds.core.DatasetInfo` (class names, metadata); `config`:
        its `VideoConfig`."""
        self.info, self.config = info, config
        self.cache_dir: epath.Path | None = None  # set by `plan`: nothing is built before
        self.videos_per_split: dict[str, int] = {}

    @property
    def metadata(self):
        return self.info.metadata

    def plan(
        self, manual_dir: epath.PathLike, download_dir: epath.PathLike, decoder_threads: int = 1
    ) -> dict[str, list[encoding.Task]]:
        """One `encoding.Task` per manifest line, by split, in manifest order.

        Reads and checks every manifest, sets the class names, empties the skip records
        and notes; the encoding cache goes under `download_dir` (TFDS's download dir).
        """
        manual_dir = epath.Path(manual_dir)
        try:
            dataset = manifest.read_dataset(manual_dir)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{e}\n\n{MANUAL_INSTRUCTIONS}") from None
        self.info.features["label"].names = dataset.class_names
        self.metadata["skipped"] = []
        self.metadata["notes"] = []
        self.videos_per_split = {split: len(entries) for split, entries in dataset.splits.items()}
        self.cache_dir = epath.Path(download_dir) / "video_tfrecords_cache" / self.config.name
        return {
            split: [
                encoding.Task(
                    split=split,
                    entry=entry,
                    label=dataset.label_id(entry),
                    video_path=str(manifest.resolve(manual_dir, entry.path)),
                    config=self.config,
                    cache_root=str(self.cache_dir),
                    decoder_threads=decoder_threads,
                )
                for entry in entries
            ]
            for split, entries in dataset.splits.items()
        }

    def record(self, outcome: encoding.Outcome) -> None:
        """Keeps the outcome's skip record and note."""
        if outcome.skipped:
            self.metadata["skipped"].append(outcome.skipped)
        if outcome.note:
            self.metadata["notes"].append(outcome.note)

    def record_all(self, records: list[dict]) -> None:
        """Keeps records written as `encoding.records_of` tags them (a Beam build's)."""
        for record in records:
            record = dict(record)
            self.metadata[record.pop("kind")].append(record)

    def check_records(self, splits) -> None:
        """Sorts the records by split and path (whatever order the videos were done in);
        fails a split where every video was bad (the skips were warned of one by one)."""
        for kind in ("skipped", "notes"):
            self.metadata[kind].sort(key=lambda r: (r["split"], r["path"]))
        for split in splits:
            skipped = [s for s in self.metadata["skipped"] if s["split"] == split]
            if len(skipped) == self.videos_per_split[split]:
                reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped)
                raise encoding.VideoBuildError(
                    f"none of the {len(skipped)} videos of split {split} could be read: {reasons}"
                )

    def summary(self, dataset_dir: epath.PathLike, examples: Mapping[str, int]) -> str:
        """The build's closing lines: per split, examples written, videos skipped or noted."""
        info_path = str(epath.Path(dataset_dir) / "metadata.json")
        return summary.build_summary(
            self.info.full_name, self.videos_per_split, examples, self.metadata, info_path
        )

    def interrupted(self) -> str:
        """The one line an interrupted build prints: how many videos the cache keeps."""
        kept = cache.Cache(self.cache_dir).count()
        return summary.interrupted_message(kept, str(self.cache_dir))

    def remove_cache(self) -> None:
        """Removes the cache of encoded videos after a build, unless the config keeps it."""
        if self.cache_dir is not None and not self.config.keep_cache:
            self.cache_dir.rmtree(missing_ok=True)
            parent = self.cache_dir.parent
            if parent.exists() and not any(parent.iterdir()):
                parent.rmdir()
