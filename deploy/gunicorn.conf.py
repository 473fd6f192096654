"""gunicorn's hooks for docker-compose's web services (``gunicorn -c deploy/gunicorn.conf.py ...``).

With ``PROMETHEUS_MULTIPROC_DIR`` set, each web process writes its request counts into that folder and a
scrape of ``/metrics`` sums them (``contest.system.metrics``): the folder is emptied when the server
starts (counts of an earlier server would be added to the new one's), and a worker process that exits
leaves its counters there (they stay in the sums, as Prometheus expects of counters).

Two gunicorn servers share the folder in docker-compose: the pages' (``web``) and the bulk pool that takes
the uploads (``web-bulk``, ``deploy/nginx.conf.template``). Each names its pool in ``TRACECUP_WEB_POOL``
and writes into a subfolder of that name, which only its own start empties (the two containers' process
ids can be equal, and each server's start would otherwise wipe the other's live counts); a scrape, which
either server may answer, sums the folder and every subfolder.
"""
import os
import shutil


def on_starting(server):
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        return
    pool = os.environ.get("TRACECUP_WEB_POOL", "").strip()
    if pool:
        # The workers, forked after this hook, inherit both: they write into the pool's subfolder, and
        # contest.system.metrics reads from the shared root.
        os.environ["TRACECUP_METRICS_ROOT"] = folder
        folder = os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(folder, pool)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, exist_ok=True)


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess  # local: only with metrics on
        multiprocess.mark_process_dead(worker.pid)
