"""Every process of the platform runs numpy's BLAS on one thread (issue 23): its parallelism is its
worker processes, and a BLAS thread pool in each oversubscribes the cores (3-5 times slower)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A matrix product big enough for OpenBLAS to use its threads, then the process's thread count.
PROBE = ("import numpy as np, os; a = np.ones((600, 600)); a @ a; "
         "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")


def _run(first_import: str, **env) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                               "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", f"{first_import}; {PROBE}"], cwd=ROOT, env={**clean, **env},  # noqa: S603 - a fixed probe
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), out[1]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts threads through Linux's /proc")
def test_a_process_that_imports_the_platform_multiplies_matrices_on_one_thread():
    threads_alone, _ = _run("pass")
    if threads_alone == 1:
        pytest.skip("numpy's BLAS uses one thread here anyway (one core): nothing to show")
    assert _run("import contest") == (1, "1")               # a worker, the web, a command
    # an operator's own setting is kept
    assert _run("import contest", OPENBLAS_NUM_THREADS="2") == (threads_alone, "2")
