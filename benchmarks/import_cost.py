"""What `from video_tfrecords import ClipSource` costs a fresh process (each spawned DataLoader
worker pays it): wall and CPU seconds, and whether it loads TensorFlow, TFDS, PyAV or the builder.
`--against OLD_TREE` (another checkout's root, e.g. `git worktree add /tmp/old REV`) imports both
trees in turn, round after round, and gives the ratio of their per-round times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial

from timing import ROOT, arguments, interleave, log, median, ratio, table

STATEMENTS = {"ClipSource": "from video_tfrecords import ClipSource",
              "package": "import video_tfrecords"}  # fmt: skip
HEAVY = ("tensorflow", "tensorflow_datasets", "av",
         "video_tfrecords.video_tfrecords_dataset_builder")  # fmt: skip
PROBE = """
import json, resource, sys, time
start = time.perf_counter()
exec({statement!r})
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                   "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def measure(tree: str, statement: str) -> dict:
    """One fresh interpreter importing from `tree`: its seconds and the heavy modules it loaded.
    CPU counts the whole process (the interpreter's own start-up included)."""
    env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3")
    code = PROBE.format(statement=statement, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd="/", check=True)  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = arguments(__doc__, "imports", rounds=15, quick_rounds=3, cpu=False)  # --out: unused
    parser.add_argument("--against", default=None, help="the root of another checkout")
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.against:
        trees["--against"] = os.path.abspath(args.against)
    rows = []
    for what, statement in STATEMENTS.items():
        log(f"{what}: {statement}")
        results = interleave({name: partial(measure, tree, statement)
                              for name, tree in trees.items()}, args.rounds)  # fmt: skip
        walls = {name: [r["wall"] for r in runs] for name, runs in results.items()}
        cpus = {name: [r["cpu"] for r in runs] for name, runs in results.items()}
        for name in trees:
            loaded = ", ".join(results[name][0]["loaded"]) or "none"
            against = name != "this tree"
            rows.append([
                f"`{statement}`", name, f"{median(walls[name]):.3f}", f"{median(cpus[name]):.3f}",
                str(ratio(walls[name], walls["this tree"])) if against else "",
                str(ratio(cpus[name], cpus["this tree"])) if against else "", loaded,
            ])  # fmt: skip
    header = ["statement", "tree", "import s (median)", "process CPU s", "import s / this tree's",
              "CPU s / this tree's", "heavy modules loaded"]
    print("\n".join(table(header, rows)))


if __name__ == "__main__":
    main()
