"""make_manifests folders takes every file the build reads as a video, and lists the rest.

Issue 44 item 5: a GIF and an APNG were dropped silently (`missing: 0`). The truth here is
FFmpeg's own decode through PyAV: a file is a video when it decodes to more than one frame.
"""

import av
import numpy as np
import pytest
from PIL import Image

import synthetic
from annotation_files import lines
from video_tfrecords import make_manifests
from video_tfrecords.ingest import video_io


def frames_ffmpeg_decodes(path) -> int:
    """Frames FFmpeg decodes from `path` (0 when it cannot open or decode it)."""
    try:
        with av.open(str(path)) as container:
            return sum(1 for _ in container.decode(video=0))
    except (av.error.FFmpegError, IndexError):
        return 0


def pictures(n):
    return [Image.fromarray(np.full((24, 32, 3), 40 * i, np.uint8)) for i in range(n)]


def animation(path, fmt=None, n=4):
    path.parent.mkdir(parents=True, exist_ok=True)
    first, *rest = pictures(n)
    first.save(path, format=fmt, save_all=True, append_images=rest, duration=100, loop=0)
    return str(path)


@pytest.fixture
def tree(tmp_path):
    """ROOT/CLASS/* holding a video, animations (GIF, APNG as .apng and as .png, animated
    WebP), still images and a text file."""
    root = tmp_path / "root"
    video = synthetic.write_video(
        str(root / "cat" / "a.mp4"), synthetic.moving_frames(4, 24, 32, 0), fps=10
    )
    animations = [
        animation(root / "cat" / "b.gif"),
        animation(root / "dog" / "c.apng", "PNG"),
        animation(root / "dog" / "d.png"),  # an APNG named .png, as most are
        animation(root / "dog" / "e.webp"),  # animated WebP: FFmpeg cannot decode it
    ]
    pictures(1)[0].save(root / "dog" / "still.png")
    pictures(1)[0].save(root / "cat" / "thumb.jpg")
    (root / "cat" / "notes.txt").write_text("not a video\n")
    return root, [video, *animations]


def test_folders_takes_what_ffmpeg_decodes_as_video_and_lists_the_rest(tree, tmp_path):
    root, _ = tree
    every_file = sorted(str(p) for p in root.rglob("*") if p.is_file())
    truth = {path for path in every_file if frames_ffmpeg_decodes(path) > 1}
    assert {p.rsplit("/", 1)[1] for p in truth} == {"a.mp4", "b.gif", "c.apng", "d.png"}

    out = tmp_path / "out"
    result = make_manifests.folders(str(root), str(out))
    classes = lines(out, "labels.txt")
    taken = {}
    for line in lines(out, "train.txt"):
        path, label = line.rsplit(" ", 1)
        taken[path] = classes[int(label)]
    assert set(taken) == truth
    assert taken == {p: p.rsplit("/", 2)[1] for p in truth}  # the class is the folder
    for path in taken:  # and the build's own reader reads each
        assert video_io.count_frames(path) == frames_ffmpeg_decodes(path)

    dropped = lines(out, "dropped.txt")
    assert [line.split(": ")[0] for line in dropped] == sorted(set(every_file) - truth)
    reasons = {line.split(": ")[0].rsplit("/", 1)[1]: line for line in dropped}
    assert "FFmpeg decodes still WebP only" in reasons["e.webp"]
    assert "a still image (.png)" in reasons["still.png"]
    assert "a still image (.jpg)" in reasons["thumb.jpg"]
    assert "not a video container or animation by its extension (txt)" in reasons["notes.txt"]
    assert result.dropped == 4 and result.missing == 0
    summary = result.summary()
    assert "train: 4 videos -> train.txt" in summary
    assert f"dropped: 4 (see {out}/dropped.txt)" in summary
