"""How fast this machine is right now, in two readings that take about half a second: ``python -m bench.machine``.

The suite's and the benches' times are only comparable between runs on a machine of the same speed, and a
machine of this workplace's kind is not always as fast as itself: the same code's ``make test`` has taken
8 minutes one day and 21 the next. The test report's header gives this reading (``tests/conftest.py``), so a
figure comes with the speed it was measured at.

- ``python_ms``: milliseconds for ``sum(range(1_000_000))``, the best of 5 (the interpreter's speed).
- ``fresh_memory_ms``: milliseconds to fill 256 MB of newly mapped memory, the best of 3 (the cost of the page
  faults that every large numpy temporary pays; on a virtual machine it also counts the host's work).
"""
from __future__ import annotations

import mmap
import time
import timeit

import numpy as np

#: Bytes filled by the fresh-memory reading.
FRESH_BYTES = 256 * 2**20


def python_ms(repeat: int = 5) -> float:
    """Best of ``repeat`` times of ``sum(range(1_000_000))``, in milliseconds."""
    return 1000 * min(timeit.repeat("sum(range(1_000_000))", number=1, repeat=repeat))


def fresh_memory_ms(repeat: int = 3) -> float:
    """Best of ``repeat`` times to map and fill :data:`FRESH_BYTES` of new memory, in milliseconds.
    The memory is mapped from the system directly (an anonymous mmap, unmapped after each fill), so every
    page is faulted in whatever the allocator is told: the test processes keep the memory numpy frees
    (the Makefile's MALLOC_ENV), and a numpy array of their own would be filled warm."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        with mmap.mmap(-1, FRESH_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as region:
            if hasattr(mmap, "MADV_HUGEPAGE"):  # as numpy asks for its large arrays
                region.madvise(mmap.MADV_HUGEPAGE)
            block = np.frombuffer(region, dtype=np.float64)
            block.fill(1.0)
            best = min(best, time.perf_counter() - start)
            del block  # the buffer must be released before the region is unmapped
    return 1000 * best


def reading() -> str:
    """One line: both readings, e.g. ``machine: python 14 ms, fresh memory 60 ms (bench.machine)``."""
    return f"machine: python {python_ms():.0f} ms, fresh memory {fresh_memory_ms():.0f} ms (bench.machine)"


if __name__ == "__main__":
    print(reading())
