"""A build's progress: a bar on a terminal, lines now and then without one."""

import io
import re

from video_tfrecords.ingest import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_spans_are_counted_beside_videos(monkeypatch):
    """An untrimmed video's five spans move the bar by five when the video is done."""
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with progress.bar("train", videos=2, lines=6) as bar:
        bar.update(5)
        bar.update(1)
    last = screen.getvalue().split("\r")[-1]
    assert re.match(r"train: 100%.*\| 6/6 .* lines/s, 2/2 videos\]", last), last


def test_on_a_terminal_one_line_a_video_counts_videos(monkeypatch):
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with progress.bar("validation", videos=3, lines=3) as bar:
        for _ in range(3):
            bar.update(1)
    last = screen.getvalue().split("\r")[-1]
    assert re.match(r"validation: 100%.*\| 3/3 .* videos/s\]", last) and "lines" not in last


def test_without_a_terminal_a_line_now_and_then(monkeypatch):
    log = io.StringIO()
    clock = iter([0.0, 1.0, 2.0, 70.0, 71.0])  # started, then one per call
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    with progress.bar("train", videos=4, lines=10, every=60.0) as bar:
        bar.update(4)  # t=1: the first video done: a line
        bar.update(1)  # t=2: too soon
        bar.update(2)  # t=70: 69 s since the last line
    # closed at t=71: the last line has the last count already, so none more
    assert log.getvalue().splitlines() == [
        "train: 4 of 10 lines, 1 of 4 videos done (1.00 videos/s, 1 s so far, about 3 s left)",
        "train: 7 of 10 lines, 3 of 4 videos done (0.04 videos/s, 1 min 10 s so far, "
        "about 23 s left)",
    ]
    assert "\r" not in log.getvalue()
