"""What ``bench.full`` and ``bench.surge`` share: the bench's database, the web server as docker-compose runs
it (nginx before gunicorn), the page load (wrk with ``bench/wrk.lua``, or httpx) and its percentiles.

Everything that touches the models imports them inside the function: a bench module is imported before
``django.setup()`` has chosen the bench's database (:func:`environment`).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from contest import edge

ROOT = Path(__file__).resolve().parent.parent

#: What one simulated visitor asks for, in turn (the public pages of a published contest).
PUBLIC_PAGES = ("/c/{slug}/", "/c/{slug}/leaderboard/", "/c/{slug}/attack-matrix/", "/c/{slug}/awards/",
                "/c/{slug}/leaderboard/?round=1")
TEAM_PAGES = ("/c/{slug}/team/",)


def environment(folder: Path) -> str:
    """Point this process (and the processes it starts) at the bench's database and broker."""
    if os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL"):
        where = f"{os.environ['DATABASE_URL'].split('@')[-1]} + {os.environ['CELERY_BROKER_URL'].split('@')[-1]}"
    else:
        os.environ.update(DATABASE_URL=f"sqlite:///{folder / 'bench.sqlite3'}", CELERY_BROKER_URL="filesystem://",
                          TRACECUP_BROKER_DIR=str(folder / "broker"))
        where = f"SQLite + filesystem broker in {folder}"
    os.environ.update(TRACECUP_VAR_DIR=str(folder), DJANGO_SETTINGS_MODULE="contest.settings",
                      CELERY_TASK_ALWAYS_EAGER="0", PYTHONUNBUFFERED="1")
    return where


def prepare(args, prefix: str) -> tuple[Path, str]:
    """A bench's start: ``args.front`` only where nginx is installed, the bench's folder (``args.folder``, else
    a new temporary one named ``prefix``...), its database and broker (:func:`environment`) and Django set up
    on them. Returns (the folder, where the data lives)."""
    args.front = args.front and edge.nginx_binary() is not None
    folder = Path(args.folder or tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    where = environment(folder)
    import django  # local: Django is set up only once environment() has chosen the bench's database
    django.setup()
    return folder, where


async def httpx_load(base: str, paths: list[tuple[str, str, dict]], clients: int, seconds: float,
                     max_requests: int) -> list[tuple[str, float, int]]:
    """``clients`` concurrent loops over ``paths`` ((group, path, cookies)) for ``seconds`` (and at most
    ``max_requests`` in all); returns (group, seconds, status) per request. Loopback only."""
    assert base.startswith("http://127.0.0.1:"), "the load client talks to loopback only"  # noqa: S101 - a benchmark's own sanity check; benchmarks never run under -O
    results: list[tuple[str, float, int]] = []
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def visitor(n: int, client_by_group: dict) -> None:
        i = n
        while time.monotonic() < deadline and len(results) < max_requests:
            group, path, _cookies = paths[i % len(paths)]
            i += 1
            t0 = time.perf_counter()
            try:
                r = await client_by_group[group].get(path)
                status = r.status_code
            except httpx.HTTPError:
                status = 0
            results.append((group, time.perf_counter() - t0, status))

    clients_by_group = {}
    for group, _path, cookies in paths:
        if group not in clients_by_group:
            clients_by_group[group] = httpx.AsyncClient(base_url=base, cookies=cookies, limits=limits,
                                                        timeout=30.0, follow_redirects=False)
    try:
        await asyncio.gather(*(visitor(n, clients_by_group) for n in range(clients)))
    finally:
        for c in clients_by_group.values():
            await c.aclose()
    return results


def wrk(base: str, paths: list[str], connections: int, seconds: float, cookies: list[str],
        out: Path, max_requests: int = 500_000, think_ms: int = 0) -> subprocess.Popen:
    """Start wrk on ``paths`` with ``connections`` connections for ``seconds`` and at most about
    ``max_requests`` requests; thread n (one per cookie string, else one) sends ``cookies[n]``; each
    connection waits ``think_ms`` between its requests (0: none, as fast as the server answers).
    Its report goes to ``out``. Loopback only."""
    assert base.startswith("http://127.0.0.1:"), "the load client talks to loopback only"  # noqa: S101 - a benchmark's own sanity check; benchmarks never run under -O
    threads = max(1, min(len(cookies), connections))
    env = dict(os.environ, WRK_PATHS=" ".join(paths), WRK_MAX_REQUESTS=str(max_requests // threads),
               **{f"WRK_COOKIE_{n}": c for n, c in enumerate(cookies)},
               **({"WRK_THINK_MS": str(think_ms)} if think_ms else {}))
    return subprocess.Popen(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds:.0f}s",  # noqa: S603, S607 - wrk from PATH, a fixed argument list
                             "--timeout", "30s", "-s", str(ROOT / "bench" / "wrk.lua"), base],
                            stdout=out.open("w"), stderr=subprocess.STDOUT, env=env)


def wrk_summary(out: Path) -> dict:
    """The figures the Lua script printed: requests, seconds, errors, non2xx, p50, p95, p99 (ms)."""
    fields = dict(line.split() for line in out.read_text().splitlines() if len(line.split()) == 2
                  and line.split()[0] in ("requests", "seconds", "errors", "non2xx", "p50", "p95", "p99"))
    if "p95" not in fields:
        raise RuntimeError(f"wrk did not report:\n{out.read_text()[-2000:]}")
    summary = {k: float(v) for k, v in fields.items()}
    summary["rate"] = summary["requests"] / summary["seconds"]
    summary["errors"] += summary.pop("non2xx")
    return summary


def httpx_summary(rows: list[tuple[str, float, int]], group: str, seconds: float) -> dict:
    """The figures of ``group``'s requests among ``rows`` ((group, seconds, status)), as :func:`wrk_summary`'s."""
    times = [t * 1000 for g, t, _s in rows if g == group]
    return {"requests": len(times), "rate": len(times) / seconds, "p50": percentile(times, 50),
            "p95": percentile(times, 95), "p99": percentile(times, 99),
            "errors": sum(1 for g, _t, s in rows if g == group and s != 200)}


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (1-99) of ``values``, interpolated between the nearest two (one value: itself)."""
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def _gunicorn(args, port: int, workers: int, env, log_path: Path) -> subprocess.Popen:
    """A gunicorn of the application on 127.0.0.1:``port`` with ``workers`` processes (``--web-threads`` > 1:
    threads each), in a process group of its own."""
    threads = ["-k", "gthread", "--threads", str(args.web_threads)] if args.web_threads > 1 else []
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, "-m", "gunicorn", "contest.wsgi", "-b", f"127.0.0.1:{port}",  # noqa: S603 - the benchmark's own command, a fixed argument list
                                 "-w", str(workers), *threads, "--timeout", "300"], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def start_web(args, logs: Path, procs: list, slug: str) -> tuple[str, str, subprocess.Popen]:
    """Start the web server as docker-compose runs it and wait until it serves ``slug``'s overview: gunicorn
    with ``--web-workers`` sync workers (``--web-threads`` > 1: threads) on loopback, behind nginx from
    ``deploy/nginx.conf.template`` (``contest.edge``) where nginx is installed and ``--no-front`` is not
    given, and then, with ``--bulk-workers`` > 0, a second gunicorn of that many workers as the template's
    bulk pool (docker-compose's web-bulk: the requests with a body of 1 MB or more). Ports: ``--port``
    (gunicorn), the next (nginx) and the one after (the bulk pool), free ports when 0. All are appended to
    ``procs`` (stopped with the workers); returns (the address the load goes to, a description, the
    pages' gunicorn master)."""
    from django.conf import settings  # local: the bench's modules load once main() has set Django up
    port = getattr(args, "port", 0) or edge.free_port()
    env = dict(os.environ, TRACECUP_TRUSTED_PROXY="1") if args.front else None
    web = _gunicorn(args, port, args.web_workers, env, logs / "bench-web.log")
    procs.append(web)
    kind = f"{args.web_threads} threads" if args.web_threads > 1 else "sync workers"
    description = f"gunicorn {args.web_workers} {kind}"
    base = f"http://127.0.0.1:{port}"
    if args.front:
        bulk_workers = getattr(args, "bulk_workers", 0)
        bulk_port = None
        if bulk_workers > 0:
            bulk_port = port + 2 if getattr(args, "port", 0) else edge.free_port()
            procs.append(_gunicorn(args, bulk_port, bulk_workers, env, logs / "bench-web-bulk.log"))
            description += f" for the pages, {bulk_workers} for bodies of 1 MB or more (web-bulk)"
        proxy = edge.Nginx(logs / "nginx", f"127.0.0.1:{port}", max_body_bytes=settings.TRACECUP_MAX_REQUEST_BYTES,
                           static_root=ROOT / "static", port=port + 1 if getattr(args, "port", 0) else None,
                           bulk_upstream=bulk_port and f"127.0.0.1:{bulk_port}")
        proxy.start()
        procs.append(proxy.proc)
        base, description = f"http://127.0.0.1:{proxy.port}", f"nginx before {description}"
        if bulk_port:
            _wait_for(f"http://127.0.0.1:{bulk_port}/c/{slug}/", logs / "bench-web-bulk.log")
    _wait_for(f"{base}/c/{slug}/", logs / "bench-web.log")
    return base, description, web


def _wait_for(url: str, log: Path, seconds: float = 60) -> None:
    """Return once ``url`` answers 200; RuntimeError with the end of ``log`` after ``seconds``."""
    deadline = time.time() + seconds
    while True:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.time() > deadline:
            raise RuntimeError("gunicorn did not start:\n" + log.read_text()[-2000:])
        time.sleep(0.3)


def signed_in_cookies(base: str, members, team_path: str) -> list[dict]:
    """A browser's cookies (session and CSRF) for each of ``members`` (Memberships), signed in and after a
    first visit of ``team_path``, which gives it its CSRF cookie."""
    from django.test import Client  # local: the models load once main() has set Django up on the bench's database
    cookies = []
    for m in members:
        browser = Client()
        browser.force_login(m.user)
        session = browser.cookies["sessionid"].value
        first = httpx.get(base + team_path, cookies={"sessionid": session}, timeout=60)
        assert first.status_code == 200, first.status_code  # noqa: S101 - a benchmark's own sanity check; benchmarks never run under -O
        cookies.append({"sessionid": session, "csrftoken": first.cookies["csrftoken"]})
    return cookies


def page_load(base: str, public_paths: list[str], team_paths: list[str], team_cookies: list[dict], *,
              clients: int, seconds: float, out: Path, think_ms: int = 0) -> dict:
    """``clients`` connections on the public pages (five in six, without a session) and the team dashboard
    (one in six, signed in with ``team_cookies``) for ``seconds``; blocks until done and returns group
    ("public", "team") -> figures (requests, rate, p50, p95, p99 in ms, errors). wrk (reports in ``out``,
    a path prefix) where installed, else the httpx client in this process (``think_ms`` is wrk's only)."""
    team_connections = max(1, clients // 6)
    if shutil.which("wrk") is not None:
        header = lambda c: "; ".join(f"{k}={v}" for k, v in c.items())  # noqa: E731
        team_out, public_out = Path(f"{out}-team.txt"), Path(f"{out}-public.txt")
        team_run = wrk(base, team_paths, team_connections, seconds, [header(c) for c in team_cookies], team_out,
                       think_ms=think_ms)
        public_run = wrk(base, public_paths, clients - team_connections, seconds, [], public_out, think_ms=think_ms)
        public_run.wait()
        team_run.wait()
        return {"public": wrk_summary(public_out), "team": wrk_summary(team_out)}
    t_load = time.perf_counter()
    paths = [("public", p, {}) for p in public_paths] * len(team_cookies)  # one request in six: team
    paths += [("team", p, c) for c in team_cookies for p in team_paths]
    rows = asyncio.run(httpx_load(base, paths, clients, seconds, max_requests=500_000))
    load_seconds = time.perf_counter() - t_load
    return {g: httpx_summary(rows, g, load_seconds) for g in ("public", "team")}
