"""A build worker process: pickled `Task`s in on stdin, pickled `Outcome`s out, in order.

Started by `generate.Workers` as a fresh interpreter that imports this module
under a bare `video_tfrecords` package (see `generate._WORKER_BOOTSTRAP`):
with OpenCV and NumPy that takes about 0.2 s, where importing the package's
`__init__` would add TFDS and a `multiprocessing` spawn would re-run the
parent's main script (for `tfds build`, TensorFlow: seconds per worker).
"""

import os
import pickle
import sys

import cv2

from video_tfrecords import generate


def main() -> None:
    results = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt results
    cv2.setNumThreads(1)  # the parallelism is in the processes
    tasks = sys.stdin.buffer
    while True:
        try:
            task = pickle.load(tasks)
        except EOFError:
            return
        pickle.dump(generate.run(task), results, protocol=pickle.HIGHEST_PROTOCOL)
        results.flush()


if __name__ == "__main__":
    main()
