"""The command line: `python -m video_tfrecords.make_manifests FORMAT ...`; see --help."""

from __future__ import annotations

import argparse
import sys

from video_tfrecords.make_manifests import FORMATS, AnnotationError

EPILOG = """\
kinetics: train.csv, validate.csv, test.csv     ucf101: classInd.txt, trainlist0N/testlist0N.txt
hmdb51: CLASS_test_splitN.txt                     ssv2: labels.json, train/validation/test.json
folders: --videos ROOT/CLASS/* or ROOT/{train,val,test}/CLASS/* (no --annotations)

Writes train.txt, val.txt, test.txt (those the annotations label), labels.txt and missing.txt
(FILE:LINE of each annotated video not found, by file name, anywhere under --videos). Several
files for one video: the annotated path, then Kinetics' ID_START_END over ID, then the annotated
extension, then mp4 > webm > mkv > m4v > mov > avi > ...; one name in two folders is an error.
UCF101 names match ignoring case. Bad annotation lines: every one listed, nothing written."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m video_tfrecords.make_manifests",
        description="Writes the manual dir of `tfds build video_tfrecords` from a dataset's "
        "published annotations.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("format", choices=list(FORMATS), metavar="FORMAT", help=", ".join(FORMATS))
    parser.add_argument("--annotations", metavar="DIR", help="the annotation files' folder")
    parser.add_argument("--videos", metavar="DIR", required=True, help="searched recursively")
    parser.add_argument("--out", metavar="DIR", required=True, help="the manual dir to write")
    parser.add_argument("--fold", type=int, help="ucf101, hmdb51: the split, 1-3 (default 1)")
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
        if args.fold is not None and args.format not in ("ucf101", "hmdb51"):
            parser.error("--fold is for ucf101 and hmdb51")
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
            kwargs = {"fold": args.fold} if args.fold is not None else {}
            result = FORMATS[args.format](args.annotations, args.videos, args.out, **kwargs)
    except AnnotationError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
