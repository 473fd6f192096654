"""``/healthz`` and ``/readyz``: is this process up, and can the site do its work.

``/healthz`` answers 200 whenever the process answers a request; it touches nothing else (no database,
no cache), so a container's health check or a load balancer never takes a live web server for a dead one
because the database blinked. ``/readyz`` checks what the site needs to do its work, each part on its
own, and answers 200 when every check passes, 503 otherwise, always with the JSON of every check::

    {"status": "fail", "checks": {"database": {"status": "ok", "ms": 1.2}, "cache": {...},
     "broker": {"status": "fail", "ms": 1003.1, "detail": "ConnectionError"}, "migrations": {...},
     "workers": {"status": "fail", "detail": "no live worker consumes: judge"}}}

``/readyz?lite=1`` leaves out the workers (docker-compose's health check of the web server: a dead judge
worker does not stop the web server from serving pages). A failure's detail is the error's class, never
its text (which may name hosts or users): the logs have the rest.
"""
from __future__ import annotations

import logging
import time
import uuid

from django.core.cache import cache
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse
from django.views.decorators.cache import never_cache

from contest.system import overview

log = logging.getLogger(__name__)

#: Set once this process has found every migration applied: a new migration comes with a new release,
#: whose processes start afresh, so a process that saw none pending never needs to look again.
_migrated = False


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return ""


def check_cache() -> str:
    """A write and its read. The site's Redis cache fails open (it answers as an empty cache while Redis
    is down), so only a value read back proves it works."""
    key, value = f"readyz:{uuid.uuid4().hex}", uuid.uuid4().hex
    cache.set(key, value, 10)
    if cache.get(key) != value:
        raise RuntimeError("the cache did not keep a value")
    cache.delete(key)
    return ""


def check_broker() -> str:
    """Every queue's depth is read from the broker: a real round trip (the depths are the System page's and
    /metrics', not the public's)."""
    overview.queue_depths()
    return ""


def check_migrations() -> str:
    global _migrated
    if not _migrated:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            raise RuntimeError(f"{len(pending)} migrations not applied")
        _migrated = True
    return ""


def check_workers() -> str:
    idle = overview.queues_without_worker()
    if idle:
        raise RuntimeError(f"no live worker consumes: {', '.join(idle)}")
    return f"{overview.live_workers().count()} live"


CHECKS = {"database": check_database, "cache": check_cache, "broker": check_broker,
          "migrations": check_migrations, "workers": check_workers}
#: What a check that needs the database reports while the database is away.
NEEDS_DATABASE = ("migrations", "workers")


def run_checks(names) -> dict:
    """{name: {"status": "ok"|"fail", "ms": time taken, "detail": ...}} of the checks ``names``."""
    results = {}
    for name in names:
        if name in NEEDS_DATABASE and results.get("database", {}).get("status") == "fail":
            results[name] = {"status": "fail", "ms": 0.0, "detail": "the database is unreachable"}
            continue
        t0 = time.perf_counter()
        try:
            detail, status = CHECKS[name](), "ok"
        except RuntimeError as exc:  # a check's own verdict: its text is ours
            detail, status = str(exc), "fail"
        except Exception as exc:  # noqa: BLE001 - any failure of a part is that check's failure, not a 500
            log.warning("readiness check %s failed", name, exc_info=True)
            detail, status = type(exc).__name__, "fail"
        results[name] = {"status": status, "ms": round((time.perf_counter() - t0) * 1000, 1)}
        if detail:
            results[name]["detail"] = detail
    return results


@never_cache
def healthz(request):
    """200 while the process answers (no database, no cache)."""
    return JsonResponse({"status": "ok"})


@never_cache
def readyz(request):
    """200 when every check passes, 503 when one fails; each check's result in the JSON."""
    names = [n for n in CHECKS if not (request.GET.get("lite") == "1" and n == "workers")]
    checks = run_checks(names)
    ok = all(c["status"] == "ok" for c in checks.values())
    return JsonResponse({"status": "ok" if ok else "fail", "checks": checks}, status=200 if ok else 503)


class HealthCheckMiddleware:
    """Answer ``GET /healthz`` and ``/readyz`` before the rest of the stack (after the metrics' count): no
    Host check (a container's health check asks by an address ``ALLOWED_HOSTS`` need not list), no HTTPS
    redirect (it asks over plain HTTP, past the proxy), no session."""

    VIEWS = {"/healthz": healthz, "/readyz": readyz}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = self.VIEWS.get(request.path_info)
        if view is None or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        return view(request)
