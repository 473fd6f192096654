"""gunicorn's hooks for docker-compose's web service (``gunicorn -c deploy/gunicorn.conf.py ...``).

With ``PROMETHEUS_MULTIPROC_DIR`` set, each web process writes its request counts into that folder and a
scrape of ``/metrics`` sums them (``contest.system.metrics``): the folder is emptied when the server
starts (counts of an earlier server would be added to the new one's), and a worker process that exits
leaves its counters there (they stay in the sums, as Prometheus expects of counters).
"""
import os
import shutil


def on_starting(server):
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder, exist_ok=True)


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess  # local: only with metrics on
        multiprocess.mark_process_dead(worker.pid)
