"""process_pool.ordered_map: order, bounded work in flight, and a worker's death costing one item."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from video_tfrecords.engines import process_pool


def square_or_die(item):
    """Squares `item`; kills its own process for negative items (a codec segfault, say)."""
    if item < 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return item * item


def fail_on_three(item):
    if item == 3:
        raise ValueError("three")
    return item


def dead(item, exitcode):
    return ("dead", item, process_pool.death_reason(exitcode))


@pytest.mark.parametrize("num_workers", [1, 2])
def test_results_come_in_input_order(num_workers):
    results = process_pool.ordered_map(square_or_die, range(20), num_workers=num_workers, on_death=dead)
    assert list(results) == [i * i for i in range(20)]


def test_a_worker_that_dies_costs_only_its_own_item():
    items = [1, 2, -5, 3, 4, 5, 6, -7, 8]
    results = list(process_pool.ordered_map(square_or_die, items, num_workers=2, on_death=dead))
    assert results == [
        1,
        4,
        ("dead", -5, "worker died (signal 9)"),
        9,
        16,
        25,
        36,
        ("dead", -7, "worker died (signal 9)"),
        64,
    ]


def test_a_pool_that_breaks_while_the_caller_holds_a_result_loses_nothing():
    # The caller is slow with the first result, so the worker running -2 is dead and
    # the pool broken before the next item is submitted (submit itself then fails).
    items = [1, -2, 3, 4, 5, 6, 7]
    results = process_pool.ordered_map(square_or_die, items, num_workers=2, on_death=dead)
    first = next(results)
    time.sleep(3)
    assert [first, *results] == [1, ("dead", -2, "worker died (signal 9)"), 9, 16, 25, 36, 49]


def failing_initializer():
    raise RuntimeError("the initializer failed")


def test_a_failing_initializer_fails_the_map_instead_of_killing_every_item():
    # Reported as worker deaths, it would turn every item into an on_death record.
    with pytest.raises(RuntimeError, match="the initializer failed"):
        list(
            process_pool.ordered_map(
                square_or_die,
                [1, 2, 3],
                num_workers=2,
                on_death=dead,
                initializer=failing_initializer,
            )
        )


def test_an_exception_in_a_worker_reaches_the_caller():
    with pytest.raises(ValueError, match="three"):
        list(process_pool.ordered_map(fail_on_three, range(6), num_workers=2, on_death=dead))


def test_items_are_pulled_lazily_at_most_two_per_worker_ahead():
    pulled = []

    def items():
        for i in range(100):
            pulled.append(i)
            yield i

    results = process_pool.ordered_map(square_or_die, items(), num_workers=2, on_death=dead)
    assert next(results) == 0
    assert len(pulled) <= 5  # 4 in flight, plus the one that found the queue full
    results.close()


def sleep_and_report(item):
    """Writes this worker's pid into the folder `item`, then works for a minute."""
    folder, index = item
    with open(os.path.join(folder, f"{os.getpid()}.{index}"), "w"):
        pass
    time.sleep(60)
    return index


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone too
        return f.read().split(")")[-1].split()[0] != "Z"


def test_workers_end_when_the_build_process_is_killed(tmp_path):
    # SIGKILL gives the pool no chance to stop them; they must not wait for work forever.
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_process_pool import sleep_and_report, dead
        from video_tfrecords.engines import process_pool
        items = [({str(tmp_path)!r}, i) for i in range(4)]
        list(process_pool.ordered_map(sleep_and_report, items, num_workers=2, on_death=dead))
        """
    )
    build = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 60
    while len(os.listdir(tmp_path)) < 2:
        assert time.time() < deadline and build.poll() is None
        time.sleep(0.1)
    workers = {int(name.split(".")[0]) for name in os.listdir(tmp_path)}
    assert all(alive(pid) for pid in workers)
    build.send_signal(signal.SIGKILL)
    build.wait()
    deadline = time.time() + 15
    while any(alive(pid) for pid in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in workers)


def mark_then_sleep(item):
    """Marks its start in the folder `item[0]`, then sleeps `item[2]` seconds."""
    folder, index, seconds = item
    with open(os.path.join(folder, str(index)), "w"):
        pass
    time.sleep(seconds)
    return index


def test_ctrl_c_stops_busy_and_idle_workers_without_tracebacks(tmp_path):
    # One worker runs a long item, the other has finished its item and waits for work.
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_process_pool import mark_then_sleep, dead
        from video_tfrecords.engines import process_pool
        items = [({str(tmp_path)!r}, 0, 60), ({str(tmp_path)!r}, 1, 0)]
        try:
            list(process_pool.ordered_map(mark_then_sleep, items, num_workers=2, on_death=dead))
        except KeyboardInterrupt:
            print("interrupted")
        """
    )
    build = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,  # Ctrl-C reaches the whole process group
    )  # fmt: skip
    deadline = time.time() + 60
    while len(os.listdir(tmp_path)) < 2:
        assert time.time() < deadline and build.poll() is None
        time.sleep(0.1)
    time.sleep(1.0)  # the second worker is back waiting for work
    os.killpg(build.pid, signal.SIGINT)
    stdout, stderr = build.communicate(timeout=30)
    assert stdout.strip() == "interrupted"
    assert "Traceback" not in stderr, stderr
