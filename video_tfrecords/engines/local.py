"""The local build: each split's videos encoded by a pool of worker processes on this machine,
their examples handed to TFDS's writer as they come, in manifest order."""

from __future__ import annotations

from video_tfrecords.engines import process_pool
from video_tfrecords.ingest import encoding, progress
from video_tfrecords.ingest.run import BuildRun

__all__ = ["LocalEngine"]


class LocalEngine:
    """Encodes with `num_workers` processes (0: one per core); `close` stops them early (an
    interrupted build: no video is cached after the count it reports)."""

    def __init__(self, run: BuildRun, num_workers: int) -> None:
        self.run = run
        self.num_workers = process_pool.worker_count(num_workers)
        self._outcomes = None  # the worker pool of the split being written
        self._bar = None  # and its progress bar

    @property
    def decoder_threads(self) -> int:
        """FFmpeg threads for each worker's decoder: the cores the workers leave."""
        return process_pool.threads_per_worker(self.num_workers)

    def generate(self, tasks: list[encoding.Task]):
        """Yields (key, example) for each video of a split, with its progress (`progress.bar`:
        lines and videos done of those listed, their rate and the time left).

        Videos go in manifest order, except that on a resumed build or a rebuild the ones
        already encoded are spread among the others (`encoding.resume_order`), and read
        back here: the workers get only the videos to encode (none: none start).
        """
        split, hits = tasks[0].split, encoding.cached(tasks)
        if any(hits):
            progress.write(
                f"{split}: {sum(hits)} of {len(tasks)} videos come from the encoding cache "
                f"({self.run.cache_dir}); encoding the other {hits.count(False)}."
            )
        lines = sum(max(len(task.parts), 1) for task in tasks)
        self._bar = bar = progress.bar(split, len(tasks), lines)  # timed from here
        ordered = encoding.resume_order(tasks, hits)
        done = {task.entry.path for task, hit in zip(tasks, hits) if hit}
        self._outcomes = encoded = process_pool.ordered_map(
            encoding.encode,
            [task for task in ordered if task.entry.path not in done],
            num_workers=self.num_workers,
            on_death=on_worker_death,
            initializer=encoding.init_worker,
        )
        with bar:
            for task in ordered:
                outcome = encoding.encode(task) if task.entry.path in done else next(encoded)
                encoding.report(outcome, self.run.config.strict)
                self.run.take(outcome)
                yield from encoding.examples_of(outcome)
                bar.update(max(len(task.parts), 1))
        encoded.close()  # its pool stops now, not when the generator is collected
        self.run.check_findings([split])

    def finish(self, info, dataset_dir) -> None:
        """Nothing left once TFDS wrote the splits: the findings are in `info` already."""

    def close(self) -> None:
        """Stops the workers and ends the bar's line (an interrupted build's message follows)."""
        if self._outcomes is not None:
            self._outcomes.close()
        if self._bar is not None:
            self._bar.close()


def on_worker_death(task: encoding.Task, exitcode: int) -> encoding.Outcome:
    """A video whose worker died twice: a skip with the signal or exit code."""
    return encoding.Outcome(task, skipped=task.finding(process_pool.death_reason(exitcode)))
