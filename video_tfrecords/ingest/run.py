"""One build's tasks and findings: the seam every engine (local, Beam, Spark) builds through.

`BuildRun.encoding_tasks` turns the manual dir's manifests into one `encoding.Task` per video
of a split (one per line of a text manifest; a JSON Lines manifest's spans of a video share
one); an engine encodes them its own way and hands each `encoding.Outcome` to `take`;
`check_findings` closes the findings (each line's skip or note, in `info.metadata`);
`summary` is what the user reads at the end, and `remove_cache` the clean-up after it.
`built_from` is what the tasks were read from (`provenance.collect`), which the engine writes
beside the dataset; `check_prepared` compares it with the `built_from` of a dataset already
prepared (`changes`). A task's video is known by its content (`file_identity`), so the cache serves
the same videos moved elsewhere.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping

from etils import epath

from video_tfrecords.ingest import (
    cache,
    changes,
    encoding,
    manifest,
    progress,
    provenance,
    spans,
    summary,
)
from video_tfrecords.records import schema
from video_tfrecords.util.text import plural

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


SHOWN = 5  # videos in several splits warned of one by one


class ManualDirError(FileNotFoundError):
    """The manual dir is missing, empty, or holds no manifest: the message says what goes in it."""


def manifest_kinds(manual_dir: epath.PathLike) -> frozenset[str] | None:
    """The annotation kinds the manifests of `manual_dir` give (`spans.feature_kinds`), which
    decide the stored features; None when they cannot be read (`encoding_tasks` then says why)."""
    try:
        dataset = manifest.read_dataset(epath.Path(manual_dir))
    except (FileNotFoundError, manifest.ManifestError):
        return None
    return spans.feature_kinds(e for entries in dataset.splits.values() for e in entries)


class BuildRun:
    """A build of one config: its tasks by split, where its encoded videos are cached, and the
    findings (skips and notes) it keeps in the dataset's `metadata` (TFDS's `info.metadata`)."""

    def __init__(self, info, config, previous: Mapping | None = None) -> None:
        """`info`: the builder's `tfds.core.DatasetInfo` (class names, metadata); `config`:
        its `VideoConfig`; `previous`: the `built_from` of the dataset this build replaces, if any
        (`provenance.read`): its videos found as it found them are not read again."""
        self.info, self.config, self.previous = info, config, previous
        self.cache_dir: epath.Path | None = None  # set by `encoding_tasks`: nothing is built before
        self.videos_per_split: dict[str, int] = {}
        self.lines_per_split: dict[str, int] = {}  # manifest lines (spans of a video each one)
        self.tasks: dict[str, list[encoding.Task]] = {}
        self.built_from: dict | None = None  # what the tasks were read from (provenance.collect)
        self.encoded = {"encoded": 0, "read back": 0}  # videos, as `take` saw them
        self._inputs = None  # (manual dir, its manifests, built_from), read once

    @property
    def metadata(self):
        return self.info.metadata

    def encoding_tasks(
        self, manual_dir: epath.PathLike, download_dir: epath.PathLike, decoder_threads: int = 1
    ) -> dict[str, list[encoding.Task]]:
        """One `encoding.Task` per video of a split, in manifest order: a text manifest's
        line, or with JSON Lines annotations one `spans.Part` per line naming the video.

        Reads and checks every manifest, sets the class names, empties the findings (skips
        and notes); the encoding cache goes under `download_dir` (TFDS's download dir).
        The info's features must store the annotations the manifests give
        (`schema.features(config, manifest_kinds(manual_dir))`).
        """
        manual_dir = epath.Path(manual_dir)
        dataset, self.built_from = self.read_inputs(manual_dir)
        files = provenance.files_by_path(self.built_from)
        copies = collections.Counter()  # (content, spans) -> tasks so far: each one's copy
        kinds = spans.feature_kinds(e for entries in dataset.splits.values() for e in entries)
        self._name_classes(dataset.class_names, kinds)
        self.metadata["skipped"] = []
        self.metadata["notes"] = self._shared_videos(dataset, files)
        self.cache_dir = epath.Path(download_dir) / "video_tfrecords_cache" / self.config.name
        self.tasks = {
            split: [
                self._task(split, group, dataset, kinds, files[split], decoder_threads, copies)
                for group in spans.group_by_video(entries)
            ]
            for split, entries in dataset.splits.items()
        }
        self.videos_per_split = {split: len(videos) for split, videos in self.tasks.items()}
        self.lines_per_split = {split: len(entries) for split, entries in dataset.splits.items()}
        return self.tasks

    def _shared_videos(self, dataset: manifest.Dataset, files: dict) -> list[dict]:
        """Warns of the videos in more than one split (the first few, then how many more),
        naming their lines in each; returns a note for each of those lines."""
        shared = manifest.in_several_splits(dataset.splits, files)
        notes = []
        for number, by_split in enumerate(shared):
            named = {split: f"{split} ({_lines(lines)})" for split, lines in by_split.items()}
            split, lines = next(iter(by_split.items()))
            if number < SHOWN:
                progress.write(
                    f"WARNING: {lines[0].path} ({files[split][lines[0].path][0]}) is in splits "
                    f"{' and '.join(named.values())}: splits that share a video leak into "
                    "each other"
                )
            for split, lines in by_split.items():
                others = " and ".join(text for other, text in named.items() if other != split)
                reason = f"the video is in split {others} too (leakage between splits)"
                notes += [{"split": split, "path": line.path, "reason": reason,
                           "where": line.where} for line in lines]  # fmt: skip
        if len(shared) > SHOWN:
            progress.write(
                f"WARNING: {len(shared) - SHOWN} more videos are in several splits; "
                "info.metadata['notes'] names each of their lines"
            )
        return notes

    def read_inputs(self, manual_dir: epath.PathLike) -> tuple[manifest.Dataset, dict]:
        """The manual dir's checked manifests, and the `built_from` of what a build of them under
        this config is made from (a stat a video, and a read of each one `previous` did not
        find as it is); read once."""
        manual_dir = epath.Path(manual_dir)
        if self._inputs is None or self._inputs[0] != str(manual_dir):
            try:
                dataset = manifest.read_dataset(manual_dir)
            except FileNotFoundError as e:
                raise ManualDirError(f"{e}\n\n{MANUAL_INSTRUCTIONS}") from None
            built_from = provenance.collect(manual_dir, dataset, self.config, self.previous)
            self._inputs = (str(manual_dir), dataset, built_from)
        return self._inputs[1], self._inputs[2]

    def check_prepared(
        self, dataset_dir: epath.PathLike, manual_dir: epath.PathLike, ways: Mapping
    ) -> tuple[str, bool]:
        """For the dataset prepared in `dataset_dir` (whose info `info` is): the line(s) to
        print and whether it is a warning: up to date with the inputs of `manual_dir` (and
        what moved, if the videos did), or (built before `built_from.json` was kept) unchecked.
        `provenance.StaleDatasetError`, naming what changed and the `ways` on, if they
        differ. Reads manifests, stats videos and reads those moved or touched only.

        Up to date with inputs that moved or were touched, the dataset's `built_from` is brought
        up to date (where they are now), so the next check reads no video again."""
        folder, name = str(dataset_dir), self.info.full_name
        old = provenance.read(folder)
        self.previous = self.previous or old
        _, current = self.read_inputs(manual_dir)
        if old is None:
            return provenance.unknown_line(name, folder, ways["overwrite"]), True
        found = changes.differences(old, current)
        if found:
            raise provenance.StaleDatasetError(provenance.stale_message(name, folder, found, ways))
        examples = sum(split.num_examples for split in self.info.splits.values())
        line = provenance.up_to_date_line(name, folder, examples)
        if old != current:
            moved = changes.moves(old, current)
            try:
                provenance.write(folder, current)
            except OSError as e:  # a dataset the user may not write: checked again next time
                moved = moved and f"{moved} ({provenance.FILE} not updated: {e})"
            line += f"\n  {moved}" if moved else ""
        return line, False

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

    def _task(self, split, group, dataset, kinds, files, decoder_threads, copies):
        """The task of one video of a split: `group`, the entries naming it; `files`: each
        video path's (file, size, mtime, ctime, content), as `built_from` found them; `copies`
        counts the tasks of the same content and spans so far (each gets a cache entry)."""
        parts = tuple(spans.part_of(e, dataset.ids, kinds) for e in group) if kinds else ()
        file, *identity = files[group[0].path]
        same = (identity[3] or file, tuple((part.start, part.end) for part in parts))
        copies[same] += 1
        return encoding.Task(
            split=split,
            entry=group[0],
            label=dataset.label_id(group[0]),
            video_path=file,
            config=self.config,
            cache_root=str(self.cache_dir),
            decoder_threads=decoder_threads,
            parts=parts,
            identity=tuple(identity),
            copy=copies[same] - 1,
        )

    def take(self, outcome: encoding.Outcome) -> None:
        """Keeps the skip of each of the outcome's lines that gives no example, and its
        notes (`encoding.line_findings`); counts the videos encoded or read back."""
        if outcome.entry is not None:
            self.encoded["read back" if outcome.entry.reused else "encoded"] += 1
        skipped, notes = encoding.line_findings(outcome)
        self.metadata["skipped"].extend(skipped)
        self.metadata["notes"].extend(notes)

    def take_findings(self, findings: list[dict]) -> None:
        """Keeps findings written as `encoding.findings_of` tags them (a Beam build's)."""
        for finding in findings:
            finding = dict(finding)
            self.metadata[finding.pop("kind")].append(finding)

    def check_findings(self, splits) -> None:
        """Sorts the findings by split, path and line (whatever order the videos were done in);
        fails a split where no line gave an example (the skips were warned of one by one)."""
        for kind in ("skipped", "notes"):
            self.metadata[kind].sort(key=_finding_order)
        for split in splits:
            skipped = [s for s in self.metadata["skipped"] if s["split"] == split]
            if len(skipped) == self.lines_per_split[split]:
                reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped)
                listed = summary.lines_of(len(skipped), self.videos_per_split[split])
                raise encoding.VideoBuildError(
                    f"none of the {listed} of split {split} gave an example: {reasons}"
                )

    def summary(self, dataset_dir: epath.PathLike, examples: Mapping[str, int]) -> str:
        """The build's closing lines: per split, examples written, lines skipped or noted;
        the videos encoded and read back, and where the kept encoding cache is."""
        info_path = str(epath.Path(dataset_dir) / "metadata.json")
        encoded, reused = self.encoded["encoded"], self.encoded["read back"]
        cache_lines = []
        if reused:  # a resumed build or a rebuild (not told on Beam)
            cache_lines.append(
                f"{plural(encoded, 'video')} encoded, {reused} read back from the cache"
            )
        if self.config.keep_cache and self.cache_dir is not None:
            cache_lines.append(
                "The encoding cache is kept for a rebuild (about the dataset's size again; "
                f"keep_cache=False removes it): {self.cache_dir}"
            )
        return summary.build_summary(
            self.info.full_name, self.lines_per_split, self.videos_per_split, examples,
            self.metadata, info_path, cache_lines,
        )  # fmt: skip

    def interrupted(self) -> str:
        """The one line an interrupted build prints: how many videos the cache keeps."""
        kept = cache.Cache(self.cache_dir).count()
        return summary.interrupted_message(kept, str(self.cache_dir))

    def remove_cache(self) -> None:
        """After a build, keeps in the cache of encoded videos only what this build read (what
        an --overwrite rebuild reads back), or removes it if the config does not keep it."""
        if self.cache_dir is not None and self.config.keep_cache:
            keys = [
                encoding.cache_key(task)
                for tasks in self.tasks.values()
                for task in tasks
                if task.identity[3] is not None  # found and read when planned
            ]
            cache.Cache(self.cache_dir).keep_only(keys)
        elif self.cache_dir is not None:
            self.cache_dir.rmtree(missing_ok=True)
            parent = self.cache_dir.parent
            if parent.exists() and not any(parent.iterdir()):
                parent.rmdir()


def _lines(lines: list[manifest.Entry]) -> str:
    """`FILE:LINE`, and how many more lines name the video there."""
    more = f", +{plural(len(lines) - 1, 'more line')}" if len(lines) > 1 else ""
    return lines[0].where + more


def _finding_order(finding: dict) -> tuple:
    """A skip's or note's place: by split, path, manifest and line number."""
    manifest_file, _, line = finding.get("where", "").rpartition(":")
    return finding["split"], finding["path"], manifest_file, int(line) if line.isdigit() else 0
