"""`show` and `show report` on a multi-label dataset (issue 47): classes counted from each
example's `labels`, a tile titled with its labels, segment and caption; a default sheet that a
laptop's screen shows at full size with titles one can read; the skip section's FILE:LINEs.

References: the manifest written here (which labels, segments and captions each line has,
each video's length), and the frames themselves: each shows its index in pixels
(`videos.flash_frame`), so a clip's frames say when it runs (index / 25 s).
"""

import json
import re

import cv2
import numpy as np
import pytest
import tensorflow_datasets as tfds

import videos
from video_tfrecords import ClipSource, VideoConfig
from video_tfrecords.show import __main__ as show
from video_tfrecords.show import charts, report, tiles, views
from video_tfrecords.show.stored import SplitRecords
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

FPS = 25
HEIGHT, WIDTH = 360, 640  # stored as they are (short_side=None): 8 frames are 5134 px wide
CLASSES = ["hold", "put", "take", "walk", "sit"]  # labels.txt; nothing is labelled "sit"
LENGTHS = {"a.mp4": 100, "b.mp4": 75, "c.mp4": 50, "d.mp4": 50}  # frames: 4, 3, 2, 2 s
CAPTION = {"a.mp4": "a person holds a cup, then puts it down", "b.mp4": "nothing happens"}
LINES = [
    {"path": "a.mp4", "labels": ["hold", "put"], "captions": [CAPTION["a.mp4"]],
     "segments": [{"label": "hold", "start": 0.0, "end": 1.2},
                  {"label": "put", "start": 1.0, "end": 2.4},
                  {"label": "hold", "start": 3.0, "end": 6.0}]},  # past a's end (4 s)
    {"path": "b.mp4", "labels": [], "captions": [CAPTION["b.mp4"]]},  # a video without actions
    {"path": "c.mp4", "labels": ["take"], "segments": [{"label": "take", "start": 0.5,
                                                        "end": 1.5}]},
    {"path": "a.mp4", "label": "walk", "start": 1.0, "end": 3.0},  # a span with one label
    {"path": "d.mp4", "labels": ["hold"], "segments": [{"label": "hold", "start": 0.0,
                                                        "end": 0.5}]},
    {"path": "d.mp4", "label": "hold", "start": 5, "end": 7},  # line 6: d ends at 2 s
    {"path": "broken.mp4", "labels": ["put"]},  # line 7: not a video
]  # fmt: skip
# By hand from LINES: examples carrying each class (the frameless span gives none), distinct
# segments, and the seconds of each video's frames inside them (a's [3, 6) holds 1 s of it).
EXAMPLES = {"hold": 2, "put": 1, "take": 1, "walk": 1, "sit": 0}
SEGMENTS = {"hold": 3, "put": 1, "take": 1, "walk": 0, "sit": 0}
SECONDS = {"hold": 1.2 + 1.0 + 0.5, "put": 1.4, "take": 1.0, "walk": 0.0, "sit": 0.0}


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    for name, length in LENGTHS.items():
        frames = np.stack([videos.flash_frame(i, False, HEIGHT, WIDTH) for i in range(length)])
        videos.write(folder / name, frames, fps=FPS)
    (folder / "broken.mp4").write_bytes(b"not a video at all" * 50)
    (folder / "labels.txt").write_text("\n".join(CLASSES) + "\n")
    (folder / "train.jsonl").write_text("".join(json.dumps(line) + "\n" for line in LINES))
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(tmp_path_factory.mktemp("data")),
        config=VideoConfig(name="labels", num_workers=1, short_side=None),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(folder))
    )
    return builder.data_dir


def read_rgb(path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)


def best_match(image: np.ndarray, patch: np.ndarray) -> float:
    """Mean squared difference where `patch` best matches `image`."""
    scores = cv2.matchTemplate(image.astype(np.float32), patch.astype(np.float32), cv2.TM_SQDIFF)
    return float(scores.min()) / patch.size


def shows(image: np.ndarray, patch: np.ndarray) -> bool:
    """Whether `patch` (drawn text) is in `image`: where it is, only the anti-aliased edge of
    a neighbouring line's glyph may touch its box (other text differs by hundreds)."""
    return best_match(image, patch) < 1.0


def drawn(text: str, scale: float, ink, paper) -> np.ndarray:
    """`text` as OpenCV draws it (Hershey simplex, anti-aliased) on a strip of `paper`."""
    (width, height), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    strip = np.full((height + base + 4, width + 4, 3), paper, np.uint8)
    cv2.putText(strip, text, (2, height + 2), cv2.FONT_HERSHEY_SIMPLEX, scale, ink, 1, cv2.LINE_AA)
    rows, columns = np.nonzero((strip != paper).any(axis=-1))  # its ink only: lines sit close
    return strip[rows.min() : rows.max() + 1, columns.min() : columns.max() + 1]


# -- report -----------------------------------------------------------------------------------


def class_rows(text: str) -> dict[str, tuple[int, int, float]]:
    """class -> (examples, segments, seconds) from the report's class table."""
    rows = {}
    for name in CLASSES:
        found = re.search(rf"^ +{name} +(\d+) +(\d+) +([\d.]+)", text, re.MULTILINE)
        assert found, (name, text)
        rows[name] = (int(found[1]), int(found[2]), float(found[3]))
    return rows


def test_report_counts_classes_from_labels(dataset_dir, capsys):
    show.main(["report", "--dataset_dir", dataset_dir])
    text = capsys.readouterr().out
    assert class_rows(text) == {
        name: (EXAMPLES[name], SEGMENTS[name], pytest.approx(SECONDS[name], abs=0.05))
        for name in CLASSES
    }
    assert "classes: 4 of 5 present" in text
    assert "no examples: sit\n" in text
    # labels an example: a 2, b 0, c 1, the walk span 1, d 1
    assert "0 to 2 an example (mean 1.00); 1 example with none" in text


def test_report_png_names_each_class_with_its_counts(dataset_dir, tmp_path):
    path = tmp_path / "report.png"
    show.main(["report", "--dataset_dir", dataset_dir, "--out", str(path)])
    image = read_rgb(path)
    for name in ("hold", "put", "take"):
        seconds = SECONDS[name]
        segments = f"{SEGMENTS[name]} segment{'s' if SEGMENTS[name] > 1 else ''}"
        label = drawn(f"{name} ({segments}, {seconds:.1f} s)", charts.SCALE, charts.INK,
                      charts.PAPER)  # fmt: skip
        assert shows(image, label), name


# -- tiles ------------------------------------------------------------------------------------


def manifest_line(filename: str, span_start: float) -> dict:
    """The line an example was built from: its video, and its span's start (0: whole)."""
    (line,) = [
        line for line in LINES
        if line["path"] == filename and abs(line.get("start", 0) - span_start) < 1e-3
    ]  # fmt: skip
    return line


def names_in(text: str) -> set[str]:
    """The class names a title lists ('hold; put (labels 0, 1)'), none for 'no label'."""
    if text.startswith("no label"):
        return set()
    return set(text.split(" (label")[0].split("; "))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_tile_names_the_clips_labels_segment_and_caption(dataset_dir, seed):
    clip = {"num_frames": 4, "stride": 2, "labels": "clip", "segment": True, "seed": seed}
    source = ClipSource("train", dataset_dir=dataset_dir, **clip)
    records = SplitRecords(dataset_dir, "train")
    assert len(source) == 5
    for index in range(len(source)):
        example = source[index]
        line = manifest_line(example["filename"], float(example["span_start"]))
        (view,) = views.example_tiles(source, index, records)
        (heading,) = view.heading
        given = set(line.get("labels", [])) | ({line["label"]} if "label" in line else set())
        segments = [(s["label"], s["start"], s["end"]) for s in line.get("segments", [])]
        given |= {name for name, _, _ in segments}
        assert names_in(heading) == given, heading
        assert "label -1" not in heading and "?" not in heading
        assert f": {line['path']}, span " in heading
        times = [videos.frame_index(frame) / FPS for frame in example["video"]]
        start, end = min(times), max(times) + 1 / FPS
        times_line, annotations = view.title
        assert f"{times[0]:.2f}-{times[-1]:.2f} s" in times_line
        parts = annotations.split(" | ")
        (clip_labels,) = [p.removeprefix("clip labels: ") for p in parts if "labels: " in p]
        seen = {n for n, s, e in segments if s < end and e > start}
        untimed = given - {name for name, _, _ in segments}
        assert names_in(clip_labels) == seen | untimed, (annotations, times)
        inside = {(n, s, e) for n, s, e in segments if s <= start and max(times) < e}
        if not segments:
            assert "no segment: drawn from the whole example" in parts
        else:
            (named,) = [p.removeprefix("in segment ") for p in parts if "segment " in p]
            name, span, _ = named.rsplit(" ", 2)
            first, last = (float(v) for v in span.split("-"))
            assert (name, first, last) in inside, (named, times)
        captions = [p for p in parts if p.startswith("caption")]
        if line["path"] in CAPTION and "start" not in line:
            assert captions == [f'caption: "{CAPTION[line["path"]]}"']
        else:  # the span and c's lines have none
            assert captions == ["caption: none"]


# -- the contact sheet ------------------------------------------------------------------------


def test_the_default_sheet_fits_a_laptop_screen_with_titles_one_can_read(
    dataset_dir, tmp_path, capsys
):
    """The issue's command: 4 examples, a boxes tile each, 8 frames of 640 px: 5134 px wide
    as stored. By default the sheet fits a 1920x1080 screen (within tiles.SCREEN unless its
    frames reached the smallest height), and its text is as tall on that screen as 16 px text
    (capitals about 11 px; descenders below)."""
    path = tmp_path / "sheet.png"
    show.main(["--dataset_dir", dataset_dir, "--labels", "clip", "--segment", "--boxes",
               "--out", str(path)])  # fmt: skip
    out = capsys.readouterr().out
    image = read_rgb(path)
    assert image.shape[0] <= 1080 and image.shape[1] <= 1920, image.shape
    shown = int(re.search(r"frames shrunk to (\d+) px high to fit", out)[1])
    assert shown < HEIGHT
    if shown > tiles.MIN_FRAME_HEIGHT:
        assert image.shape[:2] <= (tiles.SCREEN[0], tiles.SCREEN[1])
    assert image.shape[1] <= tiles.SCREEN[1]
    first = drawn(show_heading(dataset_dir), tiles.SCALE, tiles.TITLE_TEXT, tiles.TITLE_BACKGROUND)
    assert shows(image, first)  # the title is drawn at tiles.SCALE, at which a capital is
    capital = drawn("H", tiles.SCALE, tiles.TITLE_TEXT, tiles.TITLE_BACKGROUND)
    assert capital.shape[0] >= 11  # 11 px tall: 16 px text (a browser's default size)


def show_heading(dataset_dir) -> str:
    """Example 0's heading line, from the manifest: its labels, index, file and span."""
    source = ClipSource("train", dataset_dir=dataset_dir, num_frames=1)
    example = source[0]
    line = manifest_line(example["filename"], float(example["span_start"]))
    named = sorted(set(line.get("labels", [])) | ({line["label"]} if "label" in line else set()),
                   key=CLASSES.index)  # fmt: skip
    labels = "; ".join(named) or "no label"
    if named:
        ids = ", ".join(str(CLASSES.index(n)) for n in named)
        labels += f" (label{'s' if len(named) > 1 else ''} {ids})"
    end = LENGTHS[line["path"]] / FPS if "end" not in line else line["end"]
    return f"{labels}, #0: {line['path']}, span {line.get('start', 0):.2f}-{end:.2f} s"


def test_an_asked_frame_height_is_kept(dataset_dir, tmp_path):
    path = tmp_path / "big.png"
    show.main(["--dataset_dir", dataset_dir, "--examples", "1", "--num_frames", "3",
               "--frame_height", "300", "--out", str(path)])  # fmt: skip
    image = read_rgb(path)
    assert image.shape[1] == 3 * round(WIDTH * 300 / HEIGHT) + 2 * tiles.FRAME_GAP + 2 * tiles.GAP


def test_the_default_animation_fits_too(dataset_dir, tmp_path):
    import av

    path = tmp_path / "clips.gif"
    show.main(["--dataset_dir", dataset_dir, "--examples", "5", "--boxes", "--out", str(path)])
    with av.open(str(path)) as container:
        frame = next(container.decode(video=0))
    assert frame.height <= tiles.SCREEN[0] and frame.width <= tiles.SCREEN[1]


# -- skips and notes --------------------------------------------------------------------------


def test_the_skip_section_keeps_each_file_line(dataset_dir):
    statistics = report.dataset_report(dataset_dir)
    (train,) = statistics.splits
    text = report.as_text(statistics)
    about_d = [r for r in train.skipped + train.notes if r["path"] == "d.mp4"]
    assert about_d, (train.skipped, train.notes)
    rows = [row for row in text.splitlines() if "d.mp4" in row]
    assert any(re.search(r"train\.jsonl:6\b", row) for row in rows), rows
    assert not re.search(r"\.jsonl:N\b", text)
    assert any("broken.mp4" in row for row in text.splitlines())


NOTES = [  # as the build writes them: damage, then a note per span, '; '-joined
    {"split": "train", "path": "v/a.mp4", "reason": "3 packets with decode errors; "
     "bad/train.jsonl:4: span [1 s, 9 s) ends past the video's end (2.000 s): clipped; "
     "bad/train.jsonl:5: span [1.5 s, 9 s) ends past the video's end (2.000 s): clipped"},
    {"split": "train", "path": "v/b.webm", "reason": "bad/train.jsonl:13: span [5 s, 7 s) has "
     "no frame: the video ends at 3.000 s (no example)"},
    {"split": "train", "path": "v/c.mp4", "reason": "bad/train.jsonl:20: span [9 s, 12 s) has "
     "no frame: the video ends at 4.000 s (no example)"},
]  # fmt: skip


def test_a_note_is_one_row_with_its_lines(dataset_dir):
    statistics = report.dataset_report(dataset_dir)
    statistics.splits[0].notes = NOTES
    text = report.as_text(statistics)
    section = text.split("kept with a note: ")[1].splitlines()
    assert section[0] == "3 videos"
    rows = section[1:]
    counts = [int(row.split()[0]) for row in rows]
    assert sum(counts) == len(NOTES) and len(rows) == 2, rows  # a.mp4 once; b and c one kind
    (a_row,) = [row for row in rows if "v/a.mp4" in row]
    assert a_row.split()[0] == "1"
    assert "v/a.mp4 (bad/train.jsonl:4, bad/train.jsonl:5)" in a_row
    assert "3 packets with decode errors" in a_row  # alone: its own words
    (frameless,) = [row for row in rows if "v/b.webm" in row]
    assert "v/b.webm (bad/train.jsonl:13), v/c.mp4 (bad/train.jsonl:20)" in frameless


def test_the_png_lists_reasons_whole_and_says_how_many_more(dataset_dir, tmp_path):
    statistics = report.dataset_report(dataset_dir)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
             "juliet"]  # fmt: skip
    long = " ".join(f"{w} was not what the decoder expected" for w in words) + " zebra"
    skipped = [{"split": "train", "path": f"v/{w}.mp4", "reason": f"cannot open: {w} {long}"}
               for w in words]  # fmt: skip
    statistics.splits[0].skipped = skipped + skipped[:1]  # one kind twice: the most common
    statistics.splits[0].notes = []
    image = charts.report_image(statistics)
    assert image.shape[1] <= 1600
    more = drawn("+2 more (the text report lists them all)", charts.SCALE, charts.INK,
                 charts.PAPER)  # fmt: skip
    assert shows(image, more)
    end = drawn("zebra", charts.SCALE, charts.INK, charts.PAPER)
    absent = drawn("quokka", charts.SCALE, charts.INK, charts.PAPER)
    assert best_match(image, end) < best_match(image, absent) / 4  # the reason's end is there
