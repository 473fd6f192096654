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

import time
import timeit

import numpy as np

#: Bytes filled by the fresh-memory reading.
FRESH_BYTES = 256 * 2**20


def python_ms(repeat: int = 5) -> float:
    """Best of ``repeat`` times of ``sum(range(1_000_000))``, in milliseconds."""
    return 1000 * min(timeit.repeat("sum(range(1_000_000))", number=1, repeat=repeat))


def fresh_memory_ms(repeat: int = 3) -> float:
    """Best of ``repeat`` times to allocate and fill :data:`FRESH_BYTES` of new memory, in milliseconds.
    numpy maps an array this large afresh each time and unmaps it when freed, so every page is faulted in."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        block = np.ones(FRESH_BYTES // 8)
        best = min(best, time.perf_counter() - start)
        del block
    return 1000 * best


def reading() -> str:
    """One line: both readings, e.g. ``machine: python 14 ms, fresh memory 60 ms (bench.machine)``."""
    return f"machine: python {python_ms():.0f} ms, fresh memory {fresh_memory_ms():.0f} ms (bench.machine)"


if __name__ == "__main__":
    print(reading())
