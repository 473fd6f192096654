"""The buffering front (nginx) of the production-like stack: render its configuration, run it.

``deploy/nginx.conf.template`` is the one configuration: docker-compose's nginx
service fills its ``${...}`` placeholders from the environment, and
:func:`render` fills them here for the stack the tests and ``bench.hostile``
start (:class:`Nginx`: the system's ``nginx`` binary in a private folder, in front
of a gunicorn on loopback). Pure standard library; importable without Django.
"""
from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "nginx.conf.template"
_PLACEHOLDER = re.compile(r"\$\{([A-Z_]+)\}")


def nginx_binary() -> str | None:
    """The ``nginx`` executable (PATH or /usr/sbin), or None where it is not installed."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx")
                                          if os.access(p, os.X_OK)), None)


def render(values: dict[str, str], template: Path = TEMPLATE) -> str:
    """The template with each ``${NAME}`` replaced by ``values[NAME]`` (every one must be given)."""
    text = template.read_text()
    missing = sorted(set(_PLACEHOLDER.findall(text)) - set(values))
    if missing:
        raise KeyError(f"no value for {', '.join(missing)} in {template.name}")
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx from ``deploy/nginx.conf.template`` on 127.0.0.1:``port``, before ``upstream`` (host:port).

    ``bulk_upstream``: the gunicorn that takes requests with a body of 1 MB or more (the template's bulk
    pool); default ``upstream`` itself, one gunicorn for everything.
    Everything it writes (pid, logs, spooled bodies) lies in ``folder``; it runs in
    the foreground in its own process group until :meth:`stop`.
    """

    def __init__(self, folder: Path, upstream: str, *, max_body_bytes: int, static_root: Path,
                 port: int | None = None, bulk_upstream: str | None = None):
        self.folder = Path(folder)
        self.port = port or free_port()
        self.upstream = upstream
        self.bulk_upstream = bulk_upstream or upstream
        self.max_body_bytes = max_body_bytes
        self.static_root = Path(static_root)
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        server = render({"TRACECUP_UPSTREAM": self.upstream, "TRACECUP_BULK_UPSTREAM": self.bulk_upstream,
                         "TRACECUP_LISTEN": f"127.0.0.1:{self.port}",
                         "TRACECUP_MAX_BODY": str(self.max_body_bytes), "TRACECUP_STATIC_ROOT": str(self.static_root),
                         "TRACECUP_FORWARDED_PROTO": "$scheme"})
        f = self.folder
        # As root (CI, a container), nginx would hand its workers to "nobody", who cannot write the private
        # folder; outside root the directive does not apply.
        user = "user root;\n" if os.geteuid() == 0 else ""
        return f"""{user}worker_processes 1;
pid {f / 'nginx.pid'};
error_log {f / 'error.log'} warn;
events {{ worker_connections 1024; }}
http {{
    access_log {f / 'access.log'};
    client_body_temp_path {f / 'body'};
    proxy_temp_path {f / 'proxy'};
    fastcgi_temp_path {f / 'fastcgi'};
    uwsgi_temp_path {f / 'uwsgi'};
    scgi_temp_path {f / 'scgi'};
    default_type application/octet-stream;
{server}
}}
"""

    def start(self, timeout: float = 15.0) -> Nginx:
        binary = nginx_binary()
        if binary is None:
            raise FileNotFoundError("nginx is not installed (apt-get install nginx)")
        self.folder.mkdir(parents=True, exist_ok=True)
        conf = self.folder / "nginx.conf"
        conf.write_text(self.config())
        log = open(self.folder / "nginx.out", "w")
        self.proc = subprocess.Popen([binary, "-p", str(self.folder), "-c", str(conf), "-g", "daemon off;"],  # noqa: S603 - nginx at a resolved path, argument list built here
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("nginx did not start:\n" + (self.folder / "nginx.out").read_text()[-2000:]
                                       + (self.folder / "error.log").read_text()[-2000:]
                                       if (self.folder / "error.log").exists() else "") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGQUIT, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


def half_open(port: int, n: int) -> list[socket.socket]:
    """``n`` connections to 127.0.0.1:``port`` each holding half a request, as a slow client does: a token
    POST that promises 1 MB and sends a few bytes, or a GET without its final blank line (alternately).
    The caller closes them."""
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2 == 0:
            s.sendall(b"POST /api/auth/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000000\r\n\r\n{\"username\": ")
        else:
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/html\r\n")
        socks.append(s)
    return socks


def get_status(port: int, path: str, timeout: float) -> int:
    """The status of ``GET path`` on 127.0.0.1:``port`` (0: no answer within ``timeout`` s, or refused)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()
