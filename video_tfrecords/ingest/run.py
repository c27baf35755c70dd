"""One build's plan and records: the seam every engine (local, Beam, Spark) builds through.

`BuildRun.plan` turns the manual dir's manifests into one `encoding.Task` per video of a split
(one per line of a text manifest; a JSON Lines manifest's spans of a video share one);
an engine encodes them its own way and hands each `encoding.Outcome` to `record`;
`check_records` closes the records (skip records and notes, in `info.metadata`);
`summary` is what the user reads at the end, and `remove_cache` the clean-up after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from etils import epath

from video_tfrecords.ingest import cache, encoding, manifest, spans, summary
from video_tfrecords.records import schema

__all__ = ["MANUAL_INSTRUCTIONS", "BuildRun", "ManualDirError"]

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
For spans of videos, several labels, segments or captions, write train.jsonl
(val.jsonl, test.jsonl) instead: one JSON object per line, {"path": ..., and
any of "label", "labels": [...], "start"/"end" (seconds), "segments":
[{"label", "start", "end"}], "captions": ["text", ...] or [{"text", "start",
"end"}]}.
"""


class ManualDirError(FileNotFoundError):
    """The manual dir is missing, empty, or holds no manifest: the message says what goes in it."""


def manifest_kinds(manual_dir: epath.PathLike) -> frozenset[str] | None:
    """The annotation kinds the manifests of `manual_dir` give (`spans.feature_kinds`), which
    decide the stored features; None when they cannot be read (`plan` then says why)."""
    try:
        dataset = manifest.read_dataset(epath.Path(manual_dir))
    except (FileNotFoundError, manifest.ManifestError):
        return None
    return spans.feature_kinds(e for entries in dataset.splits.values() for e in entries)


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
        """One `encoding.Task` per video of a split, in manifest order: a text manifest's
        line, or with JSON Lines annotations one `spans.Part` per line naming the video.

        Reads and checks every manifest, sets the class names, empties the skip records
        and notes; the encoding cache goes under `download_dir` (TFDS's download dir).
        The info's features must store the annotations the manifests give
        (`schema.features(config, manifest_kinds(manual_dir))`).
        """
        manual_dir = epath.Path(manual_dir)
        try:
            dataset = manifest.read_dataset(manual_dir)
        except FileNotFoundError as e:
            raise ManualDirError(f"{e}\n\n{MANUAL_INSTRUCTIONS}") from None
        kinds = spans.feature_kinds(e for entries in dataset.splits.values() for e in entries)
        self._name_classes(dataset.class_names, kinds)
        self.metadata["skipped"] = []
        self.metadata["notes"] = []
        self.cache_dir = epath.Path(download_dir) / "video_tfrecords_cache" / self.config.name
        tasks = {
            split: [
                self._task(split, group, dataset, kinds, manual_dir, decoder_threads)
                for group in spans.group_by_video(entries)
            ]
            for split, entries in dataset.splits.items()
        }
        self.videos_per_split = {split: len(videos) for split, videos in tasks.items()}
        return tasks

    def _name_classes(self, class_names: list[str], kinds: frozenset[str]) -> None:
        """Sets the class names of every ClassLabel feature; an error if the features do not
        store the annotations the manifests give."""
        features = self.info.features
        missing = [name for kind in kinds for name in schema.ANNOTATIONS[kind]
                   if name not in features]  # fmt: skip
        if missing:
            raise ValueError(
                f"The manifests give {', '.join(sorted(kinds))}, but the dataset's features do "
                f"not store {', '.join(missing)}: make the builder's features from the "
                "manifests first (Builder.use_manifests)."
            )
        features[schema.LABEL].names = class_names
        if schema.LABELS_KIND in kinds:
            features[schema.LABELS].feature.names = class_names
            features[schema.LABEL_SEGMENTS].feature["label"].names = class_names

    def _task(self, split, group, dataset, kinds, manual_dir, decoder_threads) -> encoding.Task:
        """The task of one video of a split: `group`, the entries naming it."""
        parts = tuple(spans.part_of(e, dataset.ids, kinds) for e in group) if kinds else ()
        return encoding.Task(
            split=split,
            entry=group[0],
            label=dataset.label_id(group[0]),
            video_path=str(manifest.resolve(manual_dir, group[0].path)),
            config=self.config,
            cache_root=str(self.cache_dir),
            decoder_threads=decoder_threads,
            parts=parts,
        )

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
