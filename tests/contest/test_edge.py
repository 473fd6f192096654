"""The buffering front (issue 25 item 1): half-sent requests do not take the site down.

A real gunicorn with one sync worker (what docker-compose runs, with fewer workers) behind the real
nginx of ``deploy/nginx.conf.template`` (``contest.edge``), with ``TRACECUP_PRODUCTION=1``. Slow clients
open connections and send half a request (``Content-Length: 1000000`` and a few bytes; a ``GET`` without
its final blank line) and keep them open. Straight against gunicorn one such client holds the worker
and the site answers nothing (checked first: the attack is real); through nginx every page answers.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from contest import edge
from contest.workers import database_url, stop_process_groups

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _gunicorn(tmp_path, name: str, env: dict) -> tuple[int, subprocess.Popen]:
    """(port, process) of a gunicorn with one sync worker on the test database, logging to ``name``.log."""
    port = edge.free_port()
    with open(tmp_path / f"{name}.log", "w") as log:
        return port, subprocess.Popen([sys.executable, "-m", "gunicorn", "contest.wsgi", "-b", f"127.0.0.1:{port}",
                                       "--workers", "1", "--timeout", "300"], cwd=ROOT, env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)


@contextlib.contextmanager
def _stack(tmp_path, *, bulk: bool = False, **extra_env):
    """(gunicorn port, nginx port) of a production-like stack on the test database; ``extra_env``: gunicorn's.

    ``bulk``: a second gunicorn is the bulk pool, as docker-compose's web-bulk; the stack then yields
    (the pages' gunicorn port, nginx port, the bulk gunicorn's port)."""
    if edge.nginx_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is missing: .ci/run installs it")
        pytest.skip("nginx is not installed (apt-get install nginx); .ci/run installs it")
    env = dict(os.environ, DATABASE_URL=database_url(), TRACECUP_PRODUCTION="1", DEBUG="0",
               SECRET_KEY="edge-test-" + "k" * 50, ALLOWED_HOSTS="127.0.0.1", SECURE_SSL_REDIRECT="0",
               PYTHONUNBUFFERED="1", **extra_env)
    port, web = _gunicorn(tmp_path, "gunicorn", env)
    servers = [web]
    bulk_port = None
    if bulk:
        bulk_port, bulk_web = _gunicorn(tmp_path, "gunicorn-bulk", env)
        servers.append(bulk_web)
    proxy = edge.Nginx(tmp_path / "nginx", f"127.0.0.1:{port}", max_body_bytes=settings.TRACECUP_MAX_REQUEST_BYTES,
                       static_root=ROOT / "static", bulk_upstream=bulk_port and f"127.0.0.1:{bulk_port}")
    try:
        proxy.start()
        deadline = time.time() + 60
        for ready in [port, bulk_port][:len(servers)]:
            while edge.get_status(ready, "/api/contests/", timeout=5) != 200:
                assert time.time() < deadline, (tmp_path / "gunicorn.log").read_text()[-2000:]
                time.sleep(0.3)
        yield (port, proxy.port, bulk_port) if bulk else (port, proxy.port)
    finally:
        proxy.stop()
        stop_process_groups(servers, grace=5)


@pytest.fixture
def production_stack(tmp_path):
    """(gunicorn port, nginx port) of a production-like stack on the test database."""
    with _stack(tmp_path) as ports:
        yield ports


@pytest.fixture
def trusted_stack(tmp_path):
    """The same stack as docker-compose runs it, Django trusting nginx's headers (``TRACECUP_TRUSTED_PROXY``);
    the jobs it queues go to a folder broker of the test's own (no worker takes them)."""
    with _stack(tmp_path, TRACECUP_TRUSTED_PROXY="1", CELERY_BROKER_URL="",
                TRACECUP_BROKER_DIR=str(tmp_path / "broker")) as ports:
        yield ports


def test_half_sent_requests_hold_gunicorn_but_not_the_site_behind_nginx(production_stack):
    gunicorn, nginx = production_stack
    slow = edge.half_open(gunicorn, 3)  # the attack of the issue, straight at gunicorn
    try:
        time.sleep(0.5)
        assert edge.get_status(gunicorn, "/api/contests/", timeout=3) == 0, "gunicorn answered: the test shows nothing"
    finally:
        for s in slow:
            s.close()
    time.sleep(1)
    slow = edge.half_open(nginx, 20)
    try:
        time.sleep(0.5)
        answers = []
        for _ in range(8):
            t0 = time.monotonic()
            answers.append((edge.get_status(nginx, "/api/contests/", timeout=5), time.monotonic() - t0 < 2))
        assert answers == [(200, True)] * 8
    finally:
        for s in slow:
            s.close()


def _post_status(port: int, path: str, body: bytes, timeout: float) -> int:
    """The status of a JSON POST of ``body`` to 127.0.0.1:``port``, 0 if none came within ``timeout`` s."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()


def test_uploads_go_to_the_bulk_pool_so_pages_answer_while_it_is_full(tmp_path):
    """docker-compose's two gunicorns behind nginx: a request with a body of 1 MB or more goes to web-bulk,
    every other one to web. With the bulk pool's only worker held (as a deadline's uploads hold it), pages and
    small posts still answer at once, a large post waits for the bulk pool and is answered once it is free."""
    with _stack(tmp_path, bulk=True, TRACECUP_METRICS_TOKEN="t0ken") as (pages, nginx, bulk):
        large = b'{"username": "' + b"x" * 1_100_000 + b'", "password": "wrong"}'
        assert _post_status(nginx, "/api/auth/token/", large, timeout=10) == 400  # the app's answer, pool free
        held = edge.half_open(bulk, 1)  # the bulk pool's one sync worker now waits for this body
        try:
            time.sleep(0.5)
            assert edge.get_status(bulk, "/api/contests/", timeout=2) == 0, "the bulk worker answered: nothing held"
            for n in range(5):  # a user name each: five failures of one would lock it out (429)
                t0 = time.monotonic()
                assert edge.get_status(nginx, "/api/contests/", timeout=5) == 200
                small = b'{"username": "nobody%d", "password": "wrong"}' % n
                assert _post_status(nginx, "/api/auth/token/", small, timeout=5) == 400
                assert time.monotonic() - t0 < 2
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                waiting = pool.submit(_post_status, nginx, "/api/auth/token/", large, 30)
                time.sleep(2)
                assert not waiting.done(), "the large post was answered while the bulk pool was held"
                for s in held:
                    s.close()
                assert waiting.result(timeout=30) == 400
        finally:
            for s in held:
                s.close()
        # each server counts its own requests: the pages' at /metrics (the 5 small posts), the bulk pool's at
        # /metrics/bulk (the 2 large posts, and the half-sent one that held it, answered 400 once closed)
        assert {path: _posts_answered_400(nginx, path) for path in ("/metrics", "/metrics/bulk")} == {
            "/metrics": 5, "/metrics/bulk": 3}


def _posts_answered_400(port: int, path: str) -> int:
    """The POST requests answered 400 that the scrape at ``path`` counts (summed over views)."""
    import re
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer t0ken"})
        r = conn.getresponse()
        text = r.read().decode()
        assert r.status == 200, (path, r.status, text[:300])
    finally:
        conn.close()
    return int(sum(float(v) for v in re.findall(
        r'^tracecup_http_requests_total\{[^}]*method="POST"[^}]*status="400"[^}]*\} (\S+)$', text, re.M)))


def test_the_edge_refuses_a_body_over_the_cap_unread_and_passes_chunked_bodies_on(production_stack):
    _gunicorn, nginx = production_stack
    conn = http.client.HTTPConnection("127.0.0.1", nginx, timeout=10)
    conn.putrequest("POST", "/api/auth/token/")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(settings.TRACECUP_MAX_REQUEST_BYTES + 1))
    conn.endheaders()
    r = conn.getresponse()
    assert r.status == 413  # answered before a byte of the body was sent
    body = json.loads(r.read())
    # the site's own answer, not nginx's page: the API's error shape and the site's headers
    assert body["error"]["code"] == "request_too_large" and ".gz" in body["error"]["message"], body
    assert r.getheader("Content-Security-Policy")
    conn.close()
    # a page's form post over the cap, in Japanese: the site's 413 page in the asker's language
    conn = http.client.HTTPConnection("127.0.0.1", nginx, timeout=10)
    conn.putrequest("POST", "/login/")
    for k, v in (("Content-Type", "multipart/form-data; boundary=x"), ("Accept", "text/html"),
                 ("Accept-Language", "ja"), ("Content-Length", str(settings.TRACECUP_MAX_REQUEST_BYTES + 1))):
        conn.putheader(k, v)
    conn.endheaders()
    r = conn.getresponse()
    page = r.read().decode()
    assert (r.status, r.getheader("Content-Type", "").split(";")[0]) == (413, "text/html"), page[:300]
    assert "<html" in page and ".gz" in page and "展開後" in page and "MiB" in page, page[:600]  # the size rule
    assert r.getheader("Content-Security-Policy")
    conn.close()
    # a client cannot mark its own request as over the cap to reach that answer with a small body
    conn = http.client.HTTPConnection("127.0.0.1", nginx, timeout=10)
    conn.request("POST", "/api/auth/token/", body=b'{"username": "nobody", "password": "wrong"}',
                 headers={"Content-Type": "application/json", "X-TraceCup-Over-Cap": "1"})
    assert conn.getresponse().status == 400
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", nginx, timeout=10)
    conn.request("POST", "/api/auth/token/", body=iter([b'{"username": "nobody", ', b'"password": "wrong"}']),
                 headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = conn.getresponse()
    body = r.read()
    # Django read the body (nginx sent it on with its length): DRF's answer about the credentials
    assert (r.status, body.startswith(b'{"error"')) == (400, True), (r.status, body[:300])
    conn.close()


def test_docker_compose_puts_the_same_nginx_in_front_of_web():
    """compose's nginx fills every placeholder of the one template, caps bodies like Django, and web has no
    port of its own (every request passes nginx)."""
    import yaml
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    nginx = compose["nginx"]
    placeholders = set(edge._PLACEHOLDER.findall(edge.TEMPLATE.read_text()))
    assert placeholders <= set(nginx["environment"]), placeholders - set(nginx["environment"])
    assert int(nginx["environment"]["TRACECUP_MAX_BODY"]) == 200 * 1024 * 1024 + 1024 * 1024  # settings' default cap
    assert any(v.endswith("/etc/nginx/templates/default.conf.template:ro") for v in nginx["volumes"])
    assert "ports" not in compose["web"] and nginx["environment"]["TRACECUP_UPSTREAM"] == "web:8000"


def _raw_answer(port: int, request: bytes) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of ``request`` sent as bytes to 127.0.0.1:``port`` (a request http.client
    would not send, such as one with two Host headers)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.decode(errors="replace").partition("\r\n\r\n")
    status_line, *lines = head.split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _edge_headers_hold(headers: dict[str, str]) -> None:
    policy = dict(d.strip().split(" ", 1) for d in headers["content-security-policy"].split(";") if d.strip())
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'" and "script-src" not in policy
    assert (headers["x-content-type-options"], headers["x-frame-options"]) == ("nosniff", "DENY")
    assert headers["cache-control"] == "no-store"


def test_nginx_own_error_pages_carry_a_content_security_policy(production_stack, tmp_path):
    """nginx's own 400 (a request it cannot read), 404 (a static file that is not there) and 502 (no web
    worker answers) went out with no Content-Security-Policy; the site's own answers pass through untouched."""
    _gunicorn, nginx = production_stack
    for request in (b"NOT A REQUEST\r\n\r\n", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                    b"GET /static/css/none.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"):
        status, headers, body = _raw_answer(nginx, request)
        assert status in (400, 404) and "Bad request" in body and "<script" not in body, (status, body[:300])
        _edge_headers_hold(headers)
    # a 404 of the site is Django's, under the site's policy, not replaced by nginx's page
    status, headers, body = _raw_answer(nginx, b"GET /c/no-such-contest/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                               b"Connection: close\r\n\r\n")
    assert status == 404 and "Bad request" not in body and "script-src 'self'" in headers["content-security-policy"]
    # the same nginx with no web worker behind it
    down = edge.Nginx(tmp_path / "nginx-down", f"127.0.0.1:{edge.free_port()}",
                      max_body_bytes=settings.TRACECUP_MAX_REQUEST_BYTES, static_root=ROOT / "static").start()
    try:
        for path in ("/", "/api/contests/"):
            status, headers, body = _raw_answer(down.port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                           f"Connection: close\r\n\r\n".encode())
            assert status == 502 and "Temporarily unavailable" in body, (status, body[:300])
            _edge_headers_hold(headers)
    finally:
        down.stop()


def _multipart(name: str, content: bytes) -> tuple[str, bytes]:
    """(Content-Type, body) of a form with one file field ``file``."""
    boundary = "tracecup-edge-test"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/csv\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return f"multipart/form-data; boundary={boundary}", body


def _upload_trickled(port: int, path: str, token: str, content: bytes, send_rest_at: float) -> tuple[int, dict]:
    """POST an upload to nginx on ``port``: the headers and half the body now, the rest at ``send_rest_at``
    (epoch s), as a large upload's body arrives over a slow link. Returns (status, JSON answer)."""
    content_type, body = _multipart("late.csv", content)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.putrequest("POST", path)
    for k, v in (("Authorization", f"Token {token}"), ("Content-Type", content_type),
                 ("Content-Length", str(len(body))), ("Accept", "application/json")):
        conn.putheader(k, v)
    conn.endheaders(body[:len(body) // 2])
    time.sleep(max(0.0, send_rest_at - time.time()))
    conn.send(body[len(body) // 2:])
    r = conn.getresponse()
    answer = json.loads(r.read() or b"{}")
    conn.close()
    return r.status, answer


def test_an_upload_begun_before_the_deadline_whose_body_arrives_after_it_is_accepted(trusted_stack, generated):
    """Through nginx (the whole body read before Django sees it) with the deadline 1.5 s away: an upload whose
    body is still arriving at the deadline is accepted, since it began before (rules §15); one begun after
    the deadline is refused, though the sweep has not closed the phase in either case."""
    from datetime import timedelta

    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from contest.models import AnonymizedSet, Dataset, Phase
    from tests.contest.conftest import anonymize_csv, user
    _gunicorn, nginx = trusted_stack
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    token = Token.objects.get_or_create(user=user("alpha1"))[0].key
    content, path = anonymize_csv(ds), f"/api/datasets/{ds.pk}/anonymized-sets/"
    closes_at = timezone.now() + timedelta(seconds=1.5)
    Phase.objects.filter(round__contest=generated, kind=Phase.ANONYMIZATION).update(closes_at=closes_at)
    began = time.time()
    status, answer = _upload_trickled(nginx, path, token, content, send_rest_at=closes_at.timestamp() + 1.0)
    assert began < closes_at.timestamp() < time.time()  # begun before the deadline, answered after it
    assert status == 202, answer
    stored = AnonymizedSet.objects.get(pk=answer["id"])
    assert abs(stored.created_at.timestamp() - began) < 0.5  # the time it began, as nginx stated it
    status, answer = _upload_trickled(nginx, path, token, content, send_rest_at=time.time())
    assert status == 409 and "not open" in answer["error"]["message"], answer
    assert AnonymizedSet.objects.filter(dataset=ds).count() == 1
    assert Phase.objects.get(round__contest=generated, kind=Phase.ANONYMIZATION).closed_at is None
