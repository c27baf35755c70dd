"""The build on Apache Beam, inside TFDS's own Beam writer: one video per element; the
findings (skips and notes) are written to files by the workers and gathered by the driver."""

from __future__ import annotations

import json

import tensorflow_datasets as tfds
from etils import epath

from video_tfrecords.ingest import encoding
from video_tfrecords.ingest.run import BuildRun

__all__ = ["BeamEngine"]


def findings_dir(dataset_dir: epath.PathLike) -> epath.Path:
    """Where Beam's workers write the skips and notes: beside the splits."""
    return epath.Path(dataset_dir) / "build_records"


class BeamEngine:
    """Gives TFDS a `beam.PTransform` per split; `finish` gathers the findings after the
    pipeline ran and rewrites the dataset info with them."""

    def __init__(self, run: BuildRun, dataset_dir: epath.PathLike) -> None:
        """`dataset_dir`: the folder TFDS writes the splits in (its incomplete one)."""
        self.run = run
        self.findings_dir = findings_dir(dataset_dir)

    def generate(self, tasks: list[encoding.Task]):
        """The examples of a split's videos, as a PTransform for TFDS's Beam writer."""
        beam = tfds.core.lazy_imports.apache_beam
        split, strict, findings_dir = tasks[0].split, self.run.config.strict, self.findings_dir

        def expand(pipeline):
            outcomes = (
                pipeline
                | f"Videos {split}" >> beam.Create(tasks)
                | f"Spread {split}" >> beam.Reshuffle()
                | f"Encode {split}" >> beam.Map(encoding.encode)
                | f"Report {split}" >> beam.Map(encoding.report, strict)
            )
            _ = (
                outcomes
                | f"Records {split}" >> beam.FlatMap(encoding.findings_of)
                | f"Write records {split}"
                >> beam.io.WriteToText(str(findings_dir / split), file_name_suffix=".jsonl")
            )
            return outcomes | f"Examples {split}" >> beam.FlatMap(encoding.examples_of)

        return beam.ptransform_fn(expand)()

    def close(self) -> None:
        """Nothing to stop: the runner owns its workers."""

    def finish(self, info, dataset_dir: epath.PathLike) -> None:
        """After the pipeline ran: moves the findings the workers wrote (now in the finished
        `dataset_dir`, renamed with it) into the dataset info, and writes it."""
        written = findings_dir(dataset_dir)
        for path in sorted(written.glob("*.jsonl*")):
            self.run.take_findings([json.loads(line) for line in path.read_text().splitlines()])
        self.run.check_findings(list(self.run.videos_per_split))
        if written.exists():
            written.rmtree()
        info.write_to_directory(dataset_dir)
