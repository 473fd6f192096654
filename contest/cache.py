"""The shared cache fails open: a Redis that is down or refuses writes costs speed, never an answer.

Every use of Django's cache in the platform is an optimization or a soft limit
(the page cache and its state stamp, the render limit of uncached pages, the
password-form throttle; :mod:`contest.web.page_cache`,
:mod:`contest.services.site_state`, :mod:`contest.lockout`). With
``CACHE_URL`` on the broker's Redis (docker-compose), a Redis stop made each of
them raise ``redis.exceptions.ConnectionError``: every cached page answered
500, and an upload, which deletes the stamp inside its storing transaction,
rolled back. So the cache itself fails open, in this one place rather than at
each call: :class:`FailOpenRedisCache` behaves, while Redis fails, as an empty
cache that forgets every write.

- A read is a miss (``get`` returns its default, ``get_many`` nothing,
  ``has_key`` False): pages are rendered, the stamp is read from the database.
- A write is lost; ``add`` says it stored the value (what an empty cache
  does), so the caller goes on as the first one (renders the page, is allowed
  one more render); ``incr`` raises ``ValueError`` like a missing key, which
  every caller already handles by starting a new count.
- A deletion is lost. The only one that matters, the state stamp's, is
  harmless: the stamp is kept for at most ``TRACECUP_PAGE_STAMP_SECONDS`` (1 s),
  so a page is at worst that much older once Redis answers again.

After a failure the cache is not asked again for :data:`PAUSE_SECONDS`, so a
page load during an outage costs one failed connection per process every few
seconds, not one per cache call (a refused connection takes well under a
millisecond, but an unreachable host takes the connect timeout that
``contest.settings`` sets). A warning is logged at most once a
:data:`WARN_EVERY_SECONDS` per process, with the count of calls answered
without the cache since, and one when the cache answers again.
"""
from __future__ import annotations

import functools
import logging
import threading
import time

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

#: Seconds the cache is skipped after a failed call (each process finds out again by itself).
PAUSE_SECONDS = 5.0

#: Least seconds between two warnings of a process about the unreachable cache.
WARN_EVERY_SECONDS = 60.0

#: What the cache's calls raise when Redis is down, unreachable, loading or refusing writes.
CACHE_ERRORS = (RedisError, OSError)


class _Outage:
    """A process's view of the cache's health: when to try it again, and what to warn about.

    Module-level, not per backend object: Django makes one cache object per thread, and the threads of a
    process should learn of an outage once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.skip_until = 0.0
        self.warned_at = None
        self.failed_open = 0

    def skipping(self) -> bool:
        """True while the cache is paused after a failure (the call is answered without it)."""
        if time.monotonic() >= self.skip_until:
            return False
        with self.lock:
            self.failed_open += 1
        return True

    def failed(self, operation: str, exc: BaseException) -> None:
        now = time.monotonic()
        with self.lock:
            self.skip_until = now + PAUSE_SECONDS
            self.failed_open += 1
            if self.warned_at is not None and now - self.warned_at < WARN_EVERY_SECONDS:
                return
            self.warned_at, count, self.failed_open = now, self.failed_open, 0
        log.warning("the cache is unreachable (%s on %s: %s); pages are rendered and limits counted without it "
                    "(%d cache calls answered without it since the last warning)",
                    type(exc).__name__, operation, exc, count)

    def answered(self) -> None:
        if self.warned_at is None:
            return
        with self.lock:
            if self.warned_at is None:
                return
            self.warned_at, count, self.failed_open = None, self.failed_open, 0
        log.warning("the cache answers again (%d cache calls were answered without it)", count)


_OUTAGE = _Outage()


def _fails_open(on_failure):
    """Run the wrapped cache call, or return what ``on_failure`` makes of its arguments while Redis fails
    (the module docstring says what each call answers then)."""
    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            if _OUTAGE.skipping():
                return on_failure(*args, **kwargs)
            try:
                value = method(self, *args, **kwargs)
            except CACHE_ERRORS as exc:
                _OUTAGE.failed(method.__name__, exc)
                return on_failure(*args, **kwargs)
            _OUTAGE.answered()
            return value
        return wrapper
    return decorate


def _missing(key, *args, **kwargs):
    raise ValueError(f"Key '{key}' not found (the cache is unreachable)")


class FailOpenRedisCache(RedisCache):
    """Django's Redis cache that answers as an empty, forgetful cache while Redis fails (module docstring).

    ``contest.settings`` uses it for every ``redis://`` or ``rediss://`` ``CACHE_URL``."""

    get = _fails_open(lambda key, default=None, *a, **k: default)(RedisCache.get)
    get_many = _fails_open(lambda *a, **k: {})(RedisCache.get_many)
    has_key = _fails_open(lambda *a, **k: False)(RedisCache.has_key)
    add = _fails_open(lambda *a, **k: True)(RedisCache.add)
    set = _fails_open(lambda *a, **k: None)(RedisCache.set)
    set_many = _fails_open(lambda data, *a, **k: list(data))(RedisCache.set_many)
    touch = _fails_open(lambda *a, **k: False)(RedisCache.touch)
    incr = _fails_open(_missing)(RedisCache.incr)
    delete = _fails_open(lambda *a, **k: False)(RedisCache.delete)
    delete_many = _fails_open(lambda *a, **k: None)(RedisCache.delete_many)
    clear = _fails_open(lambda *a, **k: False)(RedisCache.clear)
