"""Browser tests: headless Debian Chromium driven by Playwright, a live Django server and a real
Celery worker process.

- Chromium: ``/usr/bin/chromium`` (Debian package ``chromium``; never ``playwright install``).
  Absent and not in CI (``CI`` unset): the tests skip with a message. In CI they must run.
- Screenshots of every main page go to ``$SCREENSHOT_DIR`` (default ``var/screenshots/``); the
  folder is printed at the end of the run.
- The worker is the real ``celery worker`` process fixture of ``tests/worker.py`` (shared with the
  integration test), on the same database as the live server and a private broker queue.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import demo_state
from tests.worker import celery_worker, reset_broker_pools, worker_env  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("TRACECUP_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOT_DIR = Path(os.environ.get("SCREENSHOT_DIR") or ROOT / "var" / "screenshots")
_SHOTS: list[Path] = []


def pytest_terminal_summary(terminalreporter):
    if _SHOTS:
        terminalreporter.write_line(f"browser screenshots ({len(_SHOTS)}) written to: {SCREENSHOT_DIR.resolve()}")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: CI must install Debian's chromium (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} not found: install it with `apt-get install -y chromium` to run the browser tests")
    return str(CHROMIUM)


@pytest.fixture(scope="session")
def browser(chromium_path):
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the
    # test itself (fixtures, checks) are still plain synchronous calls.
    # Set only while the browser runs: subprocesses started by later tests (check --deploy)
    # must not inherit it.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=chromium_path, headless=True,
                                   args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                         "--no-first-run", "--disable-dev-shm-usage"])
            _record_csp_violations(b)
            yield b
            b.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


#: Console messages in which Chromium reports a Content-Security-Policy violation, per test.
CSP_VIOLATIONS: list[str] = []


def _record_csp_violations(browser) -> None:
    """Every page of every context the tests open reports CSP violations into ``CSP_VIOLATIONS``."""
    new_context = browser.new_context

    def watched_context(*args, **kwargs):
        context = new_context(*args, **kwargs)
        context.on("page", lambda page: page.on(
            "console", lambda msg: CSP_VIOLATIONS.append(f"{page.url}: {msg.text}")
            if "Content Security Policy" in msg.text else None))
        return context
    browser.new_context = watched_context


@pytest.fixture(autouse=True)
def _close_the_tests_pages(request):
    """Every browser context a test opened is closed when it ends, so no page of a test outlives it: a team
    page left open polls the session's live server (every 0.7 to 4 s) until its state reads finished, which
    the next test's emptied database never says (a traceback once showed such a request refused the
    database after its test), and each open page costs Chromium time while later tests run."""
    if "browser" not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue("browser")
    before = set(browser.contexts)
    yield
    for context in browser.contexts:
        if context not in before:
            context.close()


@pytest.fixture(autouse=True)
def no_csp_violations():
    """The pages pass their own Content-Security-Policy: no blocked script, style or request."""
    CSP_VIOLATIONS.clear()
    yield
    assert not CSP_VIOLATIONS, "CSP violations:\n" + "\n".join(CSP_VIOLATIONS[:10])


@pytest.fixture
def shot():
    """``shot(page, name)`` saves a full-page screenshot ``NN-name.png``."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    if not _SHOTS:  # a fresh set per run: drop the previous run's numbered shots only
        for old in SCREENSHOT_DIR.glob("[0-9][0-9]-*.png"):
            old.unlink()

    def take(page, name: str) -> Path:
        path = SCREENSHOT_DIR / f"{len(_SHOTS) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        _SHOTS.append(path)
        return path
    return take


#: The README's three pictures (leaderboard, team dashboard during scoring, attack matrix) are taken by
#: the suite: ``SCREENSHOT_README=1 .venv/bin/pytest tests/browser`` refreshes ``docs/*.png``.
DOCS = ROOT / "docs"


@pytest.fixture
def readme_shot():
    """``readme_shot(page, name, clip=None)``: a viewport screenshot ``readme-name.png`` in the screenshot
    folder, and ``docs/name.png`` when ``SCREENSHOT_README=1``."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, clip: dict | None = None) -> Path:
        path = SCREENSHOT_DIR / f"readme-{name}.png"
        page.screenshot(path=str(path), clip=clip)
        if os.environ.get("SCREENSHOT_README") == "1":
            DOCS.mkdir(exist_ok=True)
            (DOCS / f"{name}.png").write_bytes(path.read_bytes())
        return path
    return take


@pytest.fixture
def demo_contest(transactional_db, snapshot_base):
    """The demo contest (tests/conftest.py ``demo_state``), committed for the live server."""
    return demo_state(snapshot_base)


@pytest.fixture
def celery_worker_process(celery_worker):
    """The real Celery worker process (tests/worker.py: SQLite or PostgreSQL,
    filesystem broker in a private folder or Redis), with Celery's cached broker connections dropped
    so that this process sends to the broker the worker listens on."""
    from contest.celery import app
    app.conf.task_always_eager = False
    reset_broker_pools(app)
    yield celery_worker
    reset_broker_pools(app)
