"""TraceCup platform: the Django project and the contest app (rules §§1, 4-9, 12).

The Celery app is imported here so that ``@shared_task`` functions bind to it
in every process (web, worker, beat, management commands).
"""
import os

# One thread per process for numpy's BLAS (OpenBLAS, MKL) and OpenMP, set before anything loads numpy:
# the platform's parallelism is its processes (Celery's worker processes, gunicorn's workers), about one
# per core, and a BLAS pool in each puts several threads on every core, where OpenBLAS's spinning threads
# run 3 to 5 times slower (measured: a 2019-size round's bootstrap took 15.8-20.5 s with 2 threads and
# 3.8-5.9 s with 1, on 2 busy cores). A value set in the environment is kept.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from .celery import app as celery_app  # noqa: E402 - after the thread settings above, which must come first

__all__ = ("celery_app",)
