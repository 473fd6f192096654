"""The console's System page: workers, queue depths, the last hour's jobs by kind, retrying and stuck
jobs, database and storage size (``contest.system.overview`` reads them all).

Superusers and the organizers of any contest see it (``contest.permissions.can_view_system``); the jobs
shown are those ``contest.permissions.system_jobs`` leaves the viewer, the site's sizes are the
superusers'. The figures block refreshes itself from ``system/live.json`` (the page script's poller; a
``<noscript>`` refresh without it).
"""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.template.loader import render_to_string
from django.utils import timezone

from contest import permissions, selectors
from contest.system import overview
from contest.upload_rule import size_text

from .common import page, require

#: Retrying and stuck jobs listed at most (the counts say how many in all).
JOBS_LISTED = 20
#: Seconds between two refreshes of the page without its script.
REFRESH_SECONDS = 10


def _broker_depths() -> tuple[dict | None, str]:
    """(each queue's depth, "") or (None, the error's class) when the broker does not answer."""
    try:
        return overview.queue_depths(), ""
    except Exception as exc:  # noqa: BLE001 - the page shows the broker away instead of failing
        return None, type(exc).__name__


def system_context(user) -> dict:
    """Every figure of the page for ``user`` (one read of each; about a dozen queries)."""
    now = timezone.now()
    jobs = permissions.system_jobs(user, selectors.jobs_with_contest())
    workers = overview.workers(now)
    visible = set(jobs.filter(pk__in={j.pk for w in workers for j in w.jobs}).values_list("pk", flat=True))
    for w in workers:
        w.rows = [(j, j.pk in visible) for j in w.jobs]
        w.memory = size_text(w.row.rss_bytes)
    depths, broker_error = _broker_depths()
    retrying = overview.retrying_jobs(jobs)
    stuck = overview.stuck_jobs(jobs, now)
    ctx = {"now": now, "workers": workers, "depths": depths, "broker_error": broker_error,
           "idle_queues": overview.queues_without_worker(now), "stats": overview.job_stats(jobs, now),
           "window_minutes": int(overview.WINDOW.total_seconds() // 60),
           "retrying": list(retrying[:JOBS_LISTED]), "retrying_count": retrying.count(),
           "stuck": stuck[:JOBS_LISTED], "stuck_count": len(stuck), "totals": None}
    if permissions.can_view_site_totals(user):
        files = overview.storage_totals()
        ctx["totals"] = {"database": size_text(overview.database_bytes()), "files": files["files"],
                         "size": size_text(files["size"]), "stored": size_text(files["stored"])}
    return ctx


@login_required
def system(request):
    require(permissions.can_view_system(request.user))
    ctx = {**system_context(request.user), "auto_refresh": REFRESH_SECONDS}
    return page(request, "web/system.html", ctx, nav="console")


@login_required
def system_live(request):
    """The figures block, for the page script's poller (never finished: the page follows the system)."""
    require(permissions.can_view_system(request.user))
    html = render_to_string("web/_system_live.html", system_context(request.user), request=request)
    return JsonResponse({"finished": False, "html": html})
