"""The readers of peers and recipes, each in a worker process of its own, pinned to one CPU, every
library on one thread, answering JSON lines on stdin: {"op": "open", "job": ...} (start-up CPU s)
and {"op": "run", "job": ..., "save": DIR or null} (one read of the job's clips: CPU s of decoding
and of resizing; `save`: each clip to DIR/NAME.npy, untimed). TorchCodec may run in
another Python."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from functools import partial

from builds import resize
from timing import cpu_time, pin, settled

GRAB_LIMIT = 32  # OpenCV: frames to skip by grab() before a seek is cheaper (see OpenCvReader)


def shrink(clip, size):
    """A clip's frames brought down to (h, w) as the builder does (OpenCV, one thread)."""
    import cv2
    import numpy as np

    cv2.setNumThreads(1)
    out = np.empty((len(clip), *size, clip.shape[-1]), np.uint8)
    for i, frame in enumerate(clip):
        resize(frame, size, dst=out[i])
    return out


class Mp4Reader:
    """A reader of mp4 files. A subclass's `open_video(path)` gives its handle on one video,
    with whatever index it builds (start-up); `read(video, indices)` the frames at `indices`
    (display order), in that order, uint8 [T, H, W, 3]."""

    bgr = False  # frames come out as RGB

    def __init__(self):
        self.videos = {}

    def open(self, job: dict) -> None:
        """Opens (and indexes) every video of the job that is not open yet."""
        for path in job["paths"]:
            if path not in self.videos:
                self.videos[path] = self.open_video(path)

    def clips(self, job: dict):
        """Yields (video file name, uint8 [T, H, W, 3]) for the job's clips, in order."""
        for video, indices in job["clips"]:
            path = job["paths"][video]
            yield os.path.basename(path), self.read(self.videos[path], indices)


class PyAvReader(Mp4Reader):
    """PyAV: seek to the keyframe before a wanted frame, decode forward, keep the wanted frames. It
    seeks again only when a keyframe lies between the last decoded frame and the next wanted one
    (then seeking is cheaper than decoding on), as a careful user would. The index (display order of
    packet timestamps, keyframes) is built once per video by demuxing, which reads no pixels."""

    requires = ("av",)

    def open_video(self, path: str) -> dict:
        import av

        container = av.open(path)
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        packets = sorted((p.pts, p.is_keyframe) for p in container.demux(stream)
                         if p.pts is not None)  # fmt: skip
        pts = [p for p, _ in packets]
        keyframes = [i for i, (_, key) in enumerate(packets) if key]
        index = {p: i for i, p in enumerate(pts)}
        return {"container": container, "stream": stream, "pts": pts, "keyframes": keyframes,
                "index": index, "decoder": None, "position": None}  # fmt: skip

    def read(self, video: dict, indices: list[int]):
        import bisect

        import numpy as np

        wanted = set(indices)
        frames = {}
        for target in sorted(wanted):
            if target in frames:
                continue
            keyframe = video["keyframes"][bisect.bisect_right(video["keyframes"], target) - 1]
            position = video["position"]
            if position is None or target <= position or keyframe > position:
                video["container"].seek(video["pts"][target], stream=video["stream"],
                                        backward=True, any_frame=False)  # fmt: skip
                video["decoder"] = video["container"].decode(video["stream"])
            for frame in video["decoder"]:
                index = video["index"][frame.pts]
                video["position"] = index
                if index in wanted and index not in frames:
                    frames[index] = frame.to_ndarray(format="rgb24")
                if index >= target:
                    break
        return np.stack([frames[i] for i in indices])


class OpenCvReader(Mp4Reader):
    """OpenCV's VideoCapture: `CAP_PROP_POS_FRAMES` seek, then read. A wanted frame at most
    GRAB_LIMIT frames ahead is reached with grab() (decode without colour conversion) instead of a
    seek, which would decode again from the keyframe. Frames stay BGR, as OpenCV gives them."""

    requires = ("cv2",)
    bgr = True

    def open_video(self, path: str) -> dict:
        import cv2

        cv2.setNumThreads(1)
        capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 1])
        if not capture.isOpened():
            raise RuntimeError(f"OpenCV cannot open {path}")
        return {"capture": capture, "next": 0}

    def read(self, video: dict, indices: list[int]):
        import cv2
        import numpy as np

        capture = video["capture"]
        frames = {}
        for target in sorted(set(indices)):
            gap = target - video["next"]
            if 0 <= gap <= GRAB_LIMIT:
                for _ in range(gap):
                    capture.grab()
            else:
                capture.set(cv2.CAP_PROP_POS_FRAMES, target)
            ok, frame = capture.read()
            if not ok:
                raise RuntimeError(f"OpenCV could not read frame {target}")
            frames[target] = frame
            video["next"] = target + 1
        return np.stack([frames[i] for i in indices])


class DecordReader(Mp4Reader):
    """decord's VideoReader (one thread), get_batch of the clip's indices."""

    requires = ("decord",)

    def open_video(self, path: str):
        import decord

        return decord.VideoReader(path, ctx=decord.cpu(0), num_threads=1)

    def read(self, video, indices: list[int]):
        return video.get_batch(indices).asnumpy()


class TorchCodecReader(Mp4Reader):
    """TorchCodec's VideoDecoder on the CPU (one FFmpeg thread, exact seeking), get_frames_at."""

    requires = ("cv2", "torch", "torchcodec.decoders")

    def open_video(self, path: str):
        import torch
        from torchcodec.decoders import VideoDecoder

        torch.set_num_threads(1)
        return VideoDecoder(path, device="cpu", num_ffmpeg_threads=1, dimension_order="NHWC",
                            seek_mode="exact")  # fmt: skip

    def read(self, video, indices: list[int]):
        return video.get_frames_at(indices).data.numpy()


class TfReader:
    """This project through TensorFlow: `clip_dataset`, one ordered pass (a batch) after another,
    so clip k is example k % N of epoch k // N (with a seed, epoch 0's are the clips peers.py
    planned). tf.data decodes the next batch in the background: a pass is charged all the
    process's CPU time since the previous one ended, once that work is done (`background`)."""

    requires = ("tensorflow", "tensorflow_datasets", "video_tfrecords.input_pipeline")
    bgr = False
    background = True

    def __init__(self):
        self.streams: dict[str, list] = {}  # key: [batches, file names, pending clips, position]
        self.mark = 0.0  # process CPU time when it last settled (end of an open or a pass)

    def open(self, job: dict) -> None:
        """Makes the job's pipeline and reads its first clip (start-up includes tracing)."""
        import tensorflow as tf

        from video_tfrecords import ClipSource, clip_dataset

        if job["key"] in self.streams:
            return
        spec = dict(job["spec"])
        seed = spec.pop("seed", None)
        spec.setdefault("mode", "random")
        source = ClipSource("train", data_dir=job["data_dir"], config=job["config"],
                            version=job["version"], num_frames=1)  # fmt: skip
        names = [_text(source[i]["filename"]) for i in range(len(source))]
        if "crop_size" not in spec:  # whole frames, all of one size (a box of that size)
            spec["crop_size"] = tuple(source[0]["video"].shape[1:3])
        dataset = clip_dataset(
            "train", data_dir=job["data_dir"], training=False, num_epochs=1_000_000, seed=seed,
            builder_kwargs={"config": job["config"], "version": job["version"]},
            batch_size=job["count"], dtype=tf.uint8, **spec,
        )  # fmt: skip
        batches = iter(dataset.as_numpy_iterator())
        first = list(next(batches)[0])  # handed out first: the stream does not move on
        self.streams[job["key"]] = [batches, names, first, 0]
        self.mark = settled()

    def clips(self, job: dict):
        """Yields (video file name, clip) for the next `count` clips of the stream."""
        stream = self.streams[job["key"]]
        batches, names, pending, _ = stream
        for _ in range(job["count"]):
            if not pending:
                pending.extend(next(batches)[0])
            stream[3] += 1
            yield names[(stream[3] - 1) % len(names)], pending.pop(0)


def _text(value) -> str:
    """A file name feature as str."""
    return value.decode() if isinstance(value, bytes) else str(value)


class TfFreeReader:
    """This project without TensorFlow: `video_tfrecords.ClipSource`, `source[i]` per clip."""

    requires = ("cv2", "video_tfrecords.clip_source")
    bgr = False

    def __init__(self):
        import cv2

        cv2.setNumThreads(1)
        self.sources, self.positions = {}, {}

    def open(self, job: dict) -> None:
        """Opens the dataset's ClipSource and reads its first clip (start-up, as for TF)."""
        from video_tfrecords import ClipSource

        if job["key"] in self.sources:
            return
        source = ClipSource("train", data_dir=job["data_dir"], config=job["config"],
                            version=job["version"], **job["spec"])  # fmt: skip
        source.set_epoch(0)  # seeded clips as clip_dataset's first epoch (and peers.py's plan)
        self.sources[job["key"]] = source
        self.positions[job["key"]] = 1
        source[0]

    def clips(self, job: dict):
        """Yields (video file name, clip) for the next `count` examples, in index order."""
        source = self.sources[job["key"]]
        for _ in range(job["count"]):
            i = self.positions[job["key"]] % len(source)
            self.positions[job["key"]] = i + 1
            example = source[i]
            yield _text(example["filename"]), example["video"]


READERS = {"tf": TfReader, "tf_free": TfFreeReader, "pyav": PyAvReader, "opencv": OpenCvReader,
           "decord": DecordReader, "torchcodec": TorchCodecReader}  # fmt: skip


def torchvision_transform(name: str | None):
    """A clip's training transform with torchvision (v2, one thread), as a trainer on mp4 does.
    "jitter_crop_flip": short side drawn from 256..320, random 224 crop, flip (PySlowFast's training
    recipe); "resized_crop": RandomResizedCrop 224, area (0.08, 1), aspect (3/4, 4/3) (MViT,
    VideoMAE). Clips are [T, H, W, 3] arrays; one draw per clip, shared by its frames."""
    if name is None:
        return None
    import torch
    from torchvision.transforms import v2

    torch.set_num_threads(1)
    if name == "jitter_crop_flip":
        transform = v2.Compose([v2.RandomShortestSize(list(range(256, 321)), antialias=True),
                                v2.RandomCrop(224), v2.RandomHorizontalFlip()])  # fmt: skip
    else:
        transform = v2.RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3),
                                         antialias=True)  # fmt: skip
    return lambda clip: transform(torch.from_numpy(clip).permute(0, 3, 1, 2))


def run(reader, job: dict, save: str | None) -> dict:
    """Reads the job's clips once: CPU seconds of decoding and of resizing, clip count. For a reader
    that works in the background (`background`), decoding is everything the process did since it
    last settled (the end of its previous pass or open: the work a pass leaves in the background is
    its own), less resizing and saving."""
    import numpy as np

    decode = resize = saving = 0.0
    count = 0
    transform = torchvision_transform(job.get("transform"))
    clips = reader.clips(job)
    while True:
        start = time.process_time()
        try:
            name, clip = next(clips)
        except StopIteration:
            decode += time.process_time() - start
            break
        if transform is not None:
            clip = transform(clip)  # part of the clip's cost
        decoded = time.process_time()
        decode += decoded - start
        if job.get("resize"):
            clip = shrink(clip, job["resize"])
            resize += time.process_time() - decoded
        count += 1
        if save:
            saved = time.process_time()
            np.save(os.path.join(save, name + ".npy"), clip[..., ::-1] if reader.bgr else clip)
            saving += time.process_time() - saved
    if getattr(reader, "background", False):
        end = settled()
        decode = end - reader.mark - resize - saving
        reader.mark = end
    return {"cpu": decode, "resize_cpu": resize, "clips": count}


def described(error: BaseException) -> str:
    """An exception and its cause, in one line (a failed import's cause names the missing piece)."""
    text = f"{type(error).__name__}: {error}"
    if error.__cause__ is not None:
        text += f", caused by {type(error.__cause__).__name__}: {error.__cause__}"
    return text


def serve(reader) -> None:
    """Answers requests from stdin, one JSON line each, until stdin closes."""
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "open":
                answer = {"cpu": cpu_time(partial(reader.open, request["job"]))}
            else:
                answer = run(reader, request["job"], request.get("save"))
        except Exception as error:  # noqa: BLE001 - reported to the parent, which names the reader
            answer = {"error": described(error)}
        print(json.dumps(answer), flush=True)


def main() -> None:
    """Pins the process, imports the reader's libraries, says hello, then serves requests."""
    parser = argparse.ArgumentParser(description="A peer-table reader worker (see peers.py).")
    parser.add_argument("reader", choices=READERS)
    parser.add_argument("--cpu", type=int, required=True)
    args = parser.parse_args()
    pin({args.cpu})
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    # Replies go to the real stdout; anything the libraries print goes to stderr.
    sys.stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    try:
        for module in READERS[args.reader].requires:  # the libraries it needs
            importlib.import_module(module)
        reader = READERS[args.reader]()
    except Exception as error:  # noqa: BLE001 - the parent lists the reader with this reason
        print(json.dumps({"error": described(error)}), flush=True)
        return
    print(json.dumps({"ready": True}), flush=True)
    serve(reader)


if __name__ == "__main__":
    main()
