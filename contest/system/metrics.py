"""Prometheus metrics: ``/metrics`` (prometheus-client's text format), behind ``TRACECUP_METRICS_TOKEN``.

Two kinds of figures:

- **Requests**, counted by :class:`RequestMetricsMiddleware` in the process that answered them: every
  answer by view (the URL pattern's name; ``static``, ``unmatched``), method and status, and its time in
  seconds (to the response object: a streamed download's transfer is not in it). A gunicorn server runs
  several processes, each with its own counts, and a scrape reaches one of them: with
  ``PROMETHEUS_MULTIPROC_DIR`` set (a folder the processes share, emptied at the server's start:
  ``deploy/gunicorn.conf.py``) each process writes its counts there and a scrape sums them all
  (prometheus-client's multiprocess mode); without it the counts are the answering process's alone.
- **The site**, read from the database and the broker at each scrape (:class:`SiteCollector`), so any
  process gives the same answer: jobs by kind and state, the run time of every job that ended (a
  histogram per kind, from the job rows: cumulative as Prometheus wants, since job rows are kept), queue
  depths and each worker's heartbeat, memory and running jobs.
"""
from __future__ import annotations

import functools
import hmac
import logging
import os
import time
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.http import Http404, HttpResponse
from django.urls import Resolver404, resolve
from django.views.decorators.cache import never_cache
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

from contest.models import Job
from contest.system import overview
from contest.system.models import WorkerHeartbeat

log = logging.getLogger(__name__)

#: Request time buckets, seconds: pages take milliseconds, an upload's request up to a minute.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
#: Job run time buckets, seconds: an upload's scoring takes a second, a round's training many minutes.
JOB_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 900, 1800)

#: This process's request metrics (in multiprocess mode their values live in the shared folder's files).
REQUEST_REGISTRY = CollectorRegistry(auto_describe=True)
REQUESTS = Counter("tracecup_http_requests", "Answers by view, method and status.", ["view", "method", "status"],
                   registry=REQUEST_REGISTRY)
LATENCY = Histogram("tracecup_http_request_duration_seconds", "Time to answer, by view and status, seconds.",
                    ["view", "status"], buckets=REQUEST_BUCKETS, registry=REQUEST_REGISTRY)


@functools.lru_cache(maxsize=4096)
def _view_of(path: str, urlconf: str | None) -> str:
    """The name of the URL pattern ``path`` resolves to (for answers made before Django resolved it: a
    stored public page, a refusal by a middleware)."""
    try:
        match = resolve(path, urlconf)
    except Resolver404:
        return "static" if path.startswith(settings.STATIC_URL) else "unmatched"
    return match.view_name or match._func_path


def view_label(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name or match._func_path
    return _view_of(request.path_info, getattr(request, "urlconf", None) or settings.ROOT_URLCONF)


class RequestMetricsMiddleware:
    """Count and time every answer (the outermost middleware, so stored pages and refusals count too)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        t0 = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - t0
        try:
            view, status = view_label(request), str(response.status_code)
            REQUESTS.labels(view, request.method, status).inc()
            LATENCY.labels(view, status).observe(seconds)
        except OSError:  # multiprocess mode with its folder gone: the answer goes out uncounted
            log.warning("request metrics not recorded (PROMETHEUS_MULTIPROC_DIR?)", exc_info=True)
        return response


class SiteCollector:
    """Figures of the whole site from the database and the broker, read at each scrape; a part that
    cannot be read is left out and counted in ``tracecup_scrape_errors`` (the scrape itself answers)."""

    def collect(self):
        errors = GaugeMetricFamily("tracecup_scrape_errors", "Parts of the scrape that could not be read.",
                                   labels=["part"])
        for part, read in (("jobs", self._jobs), ("job_times", self._job_times), ("queues", self._queues),
                           ("workers", self._workers)):
            try:
                yield from read()
            except Exception:  # noqa: BLE001 - a database or broker away: the other parts still answer
                log.warning("metrics: %s could not be read", part, exc_info=True)
                errors.add_metric([part], 1)
        yield errors

    def _jobs(self):
        family = GaugeMetricFamily("tracecup_jobs", "Job rows by kind and state.", labels=["kind", "state"])
        for row in Job.objects.order_by().values("kind", "status").annotate(n=Count("pk")):
            family.add_metric([row["kind"], row["status"]], row["n"])
        yield family

    def _job_times(self):
        """One query: per kind, how many ended jobs ran at most each bucket's seconds (first claim to end)."""
        ran = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
        buckets = {f"le{i}": Count("pk", filter=Q(ran__lte=timedelta(seconds=b))) for i, b in enumerate(JOB_BUCKETS)}
        rows = (Job.objects.order_by().filter(status__in=(Job.SUCCEEDED, Job.FAILED), started_at__isnull=False,
                                              finished_at__isnull=False)
                .annotate(ran=ran).values("kind").annotate(n=Count("pk"), total=Sum("ran"), **buckets))
        family = HistogramMetricFamily("tracecup_job_run_seconds", "Run time of ended jobs by kind, seconds.",
                                       labels=["kind"])
        for row in rows:
            cumulative = [(str(float(b)), row[f"le{i}"]) for i, b in enumerate(JOB_BUCKETS)] + [("+Inf", row["n"])]
            family.add_metric([row["kind"]], cumulative, sum_value=row["total"].total_seconds() if row["total"] else 0.0)
        yield family

    def _queues(self):
        family = GaugeMetricFamily("tracecup_queue_depth", "Messages waiting in each broker queue.", labels=["queue"])
        for queue, depth in overview.queue_depths().items():
            family.add_metric([queue], depth)
        yield family

    def _workers(self):
        alive = set(overview.live_workers().values_list("pk", flat=True))
        up = GaugeMetricFamily("tracecup_worker_up", "1 while the worker beats, 0 once silent or stopped.",
                               labels=["worker"])
        beat = GaugeMetricFamily("tracecup_worker_last_heartbeat_timestamp_seconds",
                                 "The worker's last heartbeat, Unix time.", labels=["worker"])
        rss = GaugeMetricFamily("tracecup_worker_resident_memory_bytes",
                                "Resident memory of the worker and its pool at its last beat.", labels=["worker"])
        running = GaugeMetricFamily("tracecup_worker_running_jobs", "Running jobs claimed by the worker.",
                                    labels=["worker"])
        claimed = dict(Job.objects.order_by().filter(status=Job.RUNNING).values("worker").annotate(n=Count("pk"))
                       .values_list("worker", "n"))
        for row in WorkerHeartbeat.objects.all():
            up.add_metric([row.name], int(row.pk in alive))
            beat.add_metric([row.name], row.beat_at.timestamp())
            rss.add_metric([row.name], row.rss_bytes)
            running.add_metric([row.name], claimed.get(row.name, 0) if row.pk in alive else 0)
        yield from (up, beat, rss, running)


def exposition() -> bytes:
    """The text of a scrape: the requests (of every process in multiprocess mode) and the site's figures."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        requests = CollectorRegistry()
        multiprocess.MultiProcessCollector(requests)
    else:
        requests = REQUEST_REGISTRY
    site = CollectorRegistry(auto_describe=False)
    site.register(SiteCollector())
    return generate_latest(requests) + generate_latest(site)


def authorized(request) -> bool:
    """Whether the request carries ``Authorization: Bearer <TRACECUP_METRICS_TOKEN>`` (compared in constant
    time)."""
    sent = request.headers.get("Authorization", "")
    scheme, _sep, token = sent.partition(" ")
    expected = settings.TRACECUP_METRICS_TOKEN
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected.encode())


@never_cache
def metrics(request):
    """The scrape; 404 while ``TRACECUP_METRICS_TOKEN`` is unset (metrics off), 401 without its token."""
    if not settings.TRACECUP_METRICS_TOKEN:
        raise Http404("metrics are off (TRACECUP_METRICS_TOKEN is not set)")
    if not authorized(request):
        response = HttpResponse("a bearer token is needed\n", status=401, content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
