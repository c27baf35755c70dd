"""The command line: `python -m video_tfrecords.make_manifests FORMAT ...`; see --help."""

from __future__ import annotations

import argparse
import sys

from video_tfrecords.make_manifests import FORMATS, AnnotationError

EPILOG = """\
kinetics: train.csv, validate.csv, test.csv     ucf101: classInd.txt, trainlist0N/testlist0N.txt
hmdb51: CLASS_test_splitN.txt                     ssv2: labels.json, train/validation/test.json
charades: Charades_v1_classes.txt, Charades_v1_train.csv, Charades_v1_test.csv (-> val)
activitynet: activity_net.v1-3.min.json and/or ActivityNet Captions train.json, val_1.json
msrvtt: train_val_videodatainfo.json, test_videodatainfo.json [, split lists (--lists)]
folders: --videos ROOT/CLASS/* or ROOT/{train,val,test}/CLASS/* (no --annotations)

Writes labels.txt and per split (train, val, test: those the annotations give) train.txt, a
`{path} {label}` line per whole labelled video, or train.jsonl, a JSON object per line with
"path" and label/labels/start/end/segments/captions, when the split's examples carry more
(Kinetics' untrimmed ID.EXT with its span; Charades, ActivityNet, MSR-VTT always).
missing.txt: FILE:LINE of each annotated video not found, by file name, anywhere under --videos.
dropped.txt: FILE:LINE and why of each item left out (start >= end, an id again, a video in no
split; folders: each file that is not a video or an animation FFmpeg reads, e.g. a still image).
clipped.txt: each span cut to its video's stated length (Charades, ActivityNet).
Several files for one video: the annotated path, then Kinetics' ID_START_END over ID, then the
annotated extension, then mp4 > webm > mkv > m4v > mov > avi > ... > gif > apng; one name in
two folders is an error. UCF101 names match ignoring case. Bad annotation lines: every one
listed, nothing written."""

# Option -> the formats that take it.
OPTIONS = {
    "fold": ("ucf101", "hmdb51"),
    "segments": ("activitynet",),
    "lists": ("msrvtt",),
    "no_spans": ("kinetics",),
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m video_tfrecords.make_manifests",
        description="Writes the manual dir of `tfds build video_tfrecords` from a dataset's "
        "published annotations.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("format", choices=list(FORMATS), metavar="FORMAT", help=", ".join(FORMATS))
    parser.add_argument(
        "--annotations", metavar="DIR", help="the annotation files' folder (activitynet, "
        "msrvtt: or one file)"
    )  # fmt: skip
    parser.add_argument("--videos", metavar="DIR", required=True, help="searched recursively")
    parser.add_argument("--out", metavar="DIR", required=True, help="the manual dir to write")
    parser.add_argument("--fold", type=int, help="ucf101, hmdb51: the split, 1-3 (default 1)")
    parser.add_argument(
        "--segments", action="store_true",
        help="activitynet: one example per segment (or caption), not per video",
    )  # fmt: skip
    parser.add_argument(
        "--lists", metavar="NAME",
        help="msrvtt: splits from lists, not the JSON: 9k (MSRVTT_train.9k.csv + "
        "MSRVTT_JSFUSION_test.csv), 7k, or NAME ({train,val,test}_list_NAME.txt)",
    )  # fmt: skip
    parser.add_argument(
        "--no-spans", action="store_true",
        help="kinetics: ID.EXT files are trimmed clips too: write them whole, no start/end",
    )  # fmt: skip
    parser.add_argument("--val", type=float, help="folders: fraction of each class for val")
    parser.add_argument("--test", type=float, help="folders: fraction of each class for test")
    parser.add_argument("--seed", type=int, help="folders: the split's seed (default 0)")
    args = parser.parse_args(argv)
    if args.format == "folders":
        if args.annotations or args.fold is not None:
            parser.error("folders takes no --annotations or --fold")
    else:
        if not args.annotations:
            parser.error(f"{args.format} needs --annotations")
        if args.val is not None or args.test is not None or args.seed is not None:
            parser.error("--val, --test and --seed are for folders")
    for option, formats in OPTIONS.items():
        if getattr(args, option) not in (None, False) and args.format not in formats:
            parser.error(f"--{option.replace('_', '-')} is for {' and '.join(formats)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.format == "folders":
            result = FORMATS["folders"](
                args.videos,
                args.out,
                val=args.val or 0.0,
                test=args.test or 0.0,
                seed=args.seed or 0,
            )
        else:
            kwargs = {
                option: getattr(args, option)
                for option, formats in OPTIONS.items()
                if args.format in formats and getattr(args, option) not in (None, False)
            }
            result = FORMATS[args.format](args.annotations, args.videos, args.out, **kwargs)
    except AnnotationError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
