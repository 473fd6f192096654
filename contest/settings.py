"""Django settings, read from the environment (DESIGN "Work in the background").

Environment variables:

Read with django-environ (``environ.Env``); nothing here touches the disk: the
folders under the var dir are made by ``contest.apps.ContestConfig.ready``.

- ``DATABASE_URL``: a database URL (``postgres://...``, ``sqlite:///...``); default an SQLite file
  ``var/tracecup.sqlite3`` under the project (embedded, no server needed).
- ``CELERY_BROKER_URL``: default kombu's filesystem transport under
  ``var/broker/`` (a server-less broker that still needs a real worker
  process; served by ``contest.broker``, which writes and claims each message
  file atomically); production ``redis://host:6379/0``.
- ``SECRET_KEY``: required with ``TRACECUP_PRODUCTION=1`` (even with ``DEBUG``
  on), and refused there if known or weak (``contest.secret_key``); otherwise a
  fixed development key is used.
- ``DEBUG`` (``1``/``0``, default ``1`` unless ``TRACECUP_PRODUCTION=1``),
  ``ALLOWED_HOSTS`` (comma separated), ``CSRF_TRUSTED_ORIGINS``.
- ``TRACECUP_PRODUCTION=1``: production hardening (HTTPS-only cookies, HSTS,
  SSL redirect, proxy header), so that ``manage.py check --deploy`` is clean.
- ``TRACECUP_VAR_DIR``: where the SQLite file and the filesystem broker live.
- ``TRACECUP_JOB_TIME_LIMIT``: seconds a job may run before its worker kills it
  (default 900); ``TRACECUP_JOB_STALE_SECONDS``: a running job whose heartbeat
  is older is queued again by the sweep (default 60).
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import environ

from contest import queues, secret_key

env = environ.Env()


def _env_bool(name: str, default: bool) -> bool:
    """``env.bool``, with an empty variable meaning unset (compose files pass ``DEBUG=`` through)."""
    return env.bool(name, default=default) if env.str(name, default="") else default


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env.str("TRACECUP_VAR_DIR", default=str(BASE_DIR / "var")))

PRODUCTION = _env_bool("TRACECUP_PRODUCTION", False)
DEBUG = _env_bool("DEBUG", not PRODUCTION)

# Development only: a fixed key so sessions survive restarts of the demo. Production refuses to start without
# a key of its own, and with a known or weak one (contest.secret_key), also with DEBUG on.
SECRET_KEY = env.str("SECRET_KEY", default="") or ("" if PRODUCTION else secret_key.DEVELOPMENT_KEY)
if PRODUCTION and secret_key.refusal(SECRET_KEY):
    from django.core.exceptions import ImproperlyConfigured
    raise ImproperlyConfigured(secret_key.refusal(SECRET_KEY))

ALLOWED_HOSTS = [h for h in env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else
                                      ["127.0.0.1", "localhost", "testserver"]) if h]
CSRF_TRUSTED_ORIGINS = [o for o in env.list("CSRF_TRUSTED_ORIGINS", default=[]) if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served locally (no CDN)
    "axes",                     # login throttling (web login and /api/auth/token/)
    "django_otp",               # second factor (contest.second_factor)
    "django_otp.plugins.otp_totp",
    "csp",                      # Content-Security-Policy header
    "contest.apps.ContestConfig",
    "contest.system.apps.SystemConfig",  # worker heartbeats, health, metrics, the System page's figures
]

MIDDLEWARE = [
    # Outermost: counts and times every answer, a stored page and a refusal included (contest.system.metrics).
    "contest.system.metrics.RequestMetricsMiddleware",
    # /healthz and /readyz, before the Host check and the HTTPS redirect (a container asks over plain HTTP).
    "contest.system.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Outermost but one: every answer carries the policy, also those made before a view runs (the 413 of
    # an oversized upload, Django's 400 for a bad Host header, a stored public page, a static file).
    "csp.middleware.CSPMiddleware",
    # A lost database connection answers 503 with Retry-After, not 500, whichever layer inside met it.
    "contest.db_unavailable.DatabaseUnavailableMiddleware",
    # Before anything reads a body: 413 for requests past TRACECUP_MAX_REQUEST_BYTES.
    "contest.upload_limits.RequestSizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Whole public pages for visitors without a session, before the session and locale work.
    "contest.web.page_cache.PublicPageCacheMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Page language: the switcher's cookie, then Accept-Language, then LANGUAGE_CODE (en); see LANGUAGES.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified(): the session's second factor was given (django-otp).
    "django_otp.middleware.OTPMiddleware",
    # Cache-Control: no-store on every answer that may carry a secret (made for a signed-in user or a write).
    "contest.no_store.NoStoreMiddleware",
    # A code owed, or a second factor required and missing: to its page (contest.second_factor).
    "contest.second_factor.SecondFactorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A draft contest's pages: 404 for anyone but its organizers (contest.web.drafts).
    "contest.web.drafts.DraftContestMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a locked-out login (too many failures) into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

# ----- login throttling (django-axes) ----------------------------------------------
# Every login, the web form and the API token endpoint, goes through Django's authenticate(),
# whose first backend counts failures: after AXES_FAILURE_LIMIT wrong passwords for one username
# from one address, that pair is locked out for AXES_COOLOFF_TIME, the right password included.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "contest.lockout.lockout_response"
# The client address of a login (contest.lockout.client_address): behind the project's nginx, which sets
# X-Real-IP to the address it saw (docker-compose sets TRACECUP_TRUSTED_PROXY=1), that header; otherwise
# the socket's peer (a header from a client without our proxy in front could be anything).
TRACECUP_TRUSTED_PROXY = _env_bool("TRACECUP_TRUSTED_PROXY", False)
AXES_CLIENT_IP_CALLABLE = "contest.lockout.client_address"
AXES_VERBOSE = False

# ----- second factor (django-otp, contest.second_factor) ------------------------------
#: Who must sign in with a code of an authenticator app (TOTP) before the console, the System page and the
#: admin: "superusers" (superusers and staff; production's default), "organizers" (also every contest's
#: organizers) or "" (nobody; any account may still add one on its account page).
TRACECUP_REQUIRE_2FA_FOR = env.str("TRACECUP_REQUIRE_2FA_FOR", default="superusers" if PRODUCTION else "").strip()
if TRACECUP_REQUIRE_2FA_FOR not in ("", "superusers", "organizers"):
    from django.core.exceptions import ImproperlyConfigured
    raise ImproperlyConfigured('TRACECUP_REQUIRE_2FA_FOR is "superusers", "organizers" or empty')
OTP_TOTP_ISSUER = "TraceCup"  # the name an authenticator app shows beside the code

# ----- Content-Security-Policy (django-csp) ------------------------------------------
# Scripts, styles, images and requests from this site only; no inline script and no eval. Inline
# style attributes are allowed (style-src-attr): the server-rendered tables and the plots set
# widths and colours with them, and a style attribute cannot run code.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

ROOT_URLCONF = "contest.urls"
WSGI_APPLICATION = "contest.wsgi.application"

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [BASE_DIR / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]

# ----- cache ----------------------------------------------------------------
# One page cache (contest.web.page_cache): whole public pages for visitors without a session and the team
# dashboard per session, under a key that holds the site's state stamp, so nothing is invalidated by hand.
# CACHE_URL (e.g. redis://127.0.0.1:6379/2) shares the stored pages between web processes (docker-compose
# sets it); by default each process keeps its own in memory (each then reads the stamp from the database).


def cache_settings(url: str) -> dict:
    """The cache of ``url`` (``CACHE_URL``'s form). A Redis cache fails open (``contest.cache``): while Redis
    is down, pages render without it and uploads are stored, never answered 500. Its connection is given up
    after 0.5 s (a host that does not answer), not the system's default of minutes."""
    config = env.cache_url_config(url)
    if config["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
        config["BACKEND"] = "contest.cache.FailOpenRedisCache"
        config.setdefault("OPTIONS", {}).update(socket_connect_timeout=0.5, socket_timeout=1.0)
    return config


CACHES = {"default": cache_settings(env.str("CACHE_URL", default="") or "locmemcache://tracecup")}
#: Seconds a stored page is kept and the clock bucket of its key (0: no page cache): what only the clock
#: changes (a phase opening at its time) shows within this time; audited actions and jobs' ends at once.
TRACECUP_PAGE_CACHE_SECONDS = env.int("TRACECUP_PAGE_CACHE_SECONDS", default=10)
#: Longest the state stamp read from the database is reused, in seconds (contest.services.site_state): a page
#: hit makes no query; audited actions and jobs' ends delete it at once (in every process with CACHE_URL).
TRACECUP_PAGE_STAMP_SECONDS = env.int("TRACECUP_PAGE_STAMP_SECONDS", default=1)
#: Public pages a client address may have rendered (not served from the cache) per minute; 0: no limit
#: (the default outside TRACECUP_PRODUCTION: the demo, tests and benchmarks come from one address).
TRACECUP_PAGE_RENDERS_PER_MINUTE = env.int("TRACECUP_PAGE_RENDERS_PER_MINUTE", default=120 if PRODUCTION else 0)

# ----- database -------------------------------------------------------------
DATABASE_URL = env.str("DATABASE_URL", default="") or f"sqlite:///{VAR_DIR / 'tracecup.sqlite3'}"
DATABASES = {"default": env.db_url_config(DATABASE_URL)}
DATABASES["default"]["CONN_MAX_AGE"] = 0 if DATABASE_URL.startswith("sqlite") else 60
# A kept connection is checked before a request uses it: one the server dropped (a restart, a failover,
# pg_terminate_backend) is replaced instead of answering 500.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The web process and the worker write the same file: wait for the lock
    # instead of failing, and take the write lock at BEGIN so that the
    # count-then-insert of an upload is serialized (select_for_update is a
    # no-op on SQLite).
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 60, "transaction_mode": "IMMEDIATE"})
    # A file (not in-memory) test database, so that a real worker process
    # started by the integration test sees the same data. One per test run.
    DATABASES["default"]["TEST"] = {"NAME": env.str(
        "TRACECUP_TEST_SQLITE", default=str(VAR_DIR / f"test_tracecup_{os.getpid()}.sqlite3"))}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"  # stored times are UTC; each contest shows its own zone
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"  # made by collectstatic
STATICFILES_DIRS = [p for p in [BASE_DIR / "static"] if p.is_dir()]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage" if PRODUCTION
                    else "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# The HTML pages (contest.web, a separate package) have their own login page.
LOGIN_URL = "/login/" if (BASE_DIR / "contest" / "web" / "urls.py").exists() else "/accounts/login/"
LOCALE_PATHS = [p for p in [BASE_DIR / "contest" / "web" / "locale"] if p.is_dir()]
LANGUAGES = [("en", "English"), ("ja", "日本語")]
LOGIN_REDIRECT_URL = "/"

# Upload bodies beyond this are spooled to disk; the contest's own size limit is
# checked by the upload service on both the compressed and the decompressed size.
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024
# The hard cap of any request (contest.upload_limits): the largest upload a contest allows plus the form.
TRACECUP_MAX_REQUEST_BYTES = env.int("TRACECUP_MAX_REQUEST_BYTES", default=200 * 1024 * 1024 + 1024 * 1024)
FILE_UPLOAD_HANDLERS = [
    "contest.upload_limits.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# ----- REST API ---------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["contest.api.access.DenyUnlessNamed"],  # each view names its own
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "contest.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    # Request rates (contest.api.throttles): per client address, per user, and upload bursts; the rates
    # are TRACECUP_API_THROTTLE_RATES below, read at each request.
    "DEFAULT_THROTTLE_CLASSES": ["contest.api.throttles.AnonThrottle", "contest.api.throttles.UserThrottle"],
}


def _rate(name: str, production_default: str) -> str | None:
    """A rate (``"120/min"``) from the environment; ``""`` or ``"0"`` is no limit. The default limits only in
    production: the demo, the tests and the benchmarks send everything from one address and one user."""
    value = env.str(name, default=production_default if PRODUCTION else "").strip()
    return None if value in ("", "0") else value


#: The API's request rates (contest.api.throttles, 429 with Retry-After past them): ``anon`` per client
#: address without a user, ``user`` per signed-in user, ``uploads`` per user on the upload endpoints.
TRACECUP_API_THROTTLE_RATES = {
    "anon": _rate("TRACECUP_API_ANON_RATE", "120/min"),
    "user": _rate("TRACECUP_API_USER_RATE", "600/min"),
    "uploads": _rate("TRACECUP_API_UPLOAD_RATE", "10/min"),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "TraceCup API",
    "DESCRIPTION": "Location-trace anonymization contest (PWS Cup 2019 kind): "
                   "data downloads, anonymized-set and attack uploads, jobs, scores and results. "
                   "Authenticate with `Authorization: Token <key>` (POST /api/auth/token/). "
                   "Requests are rate-limited per client address, per user and, on the upload endpoints, "
                   "per user again; past a rate the answer is 429 with `Retry-After` (seconds) and the error "
                   "code `throttled`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# ----- Celery -------------------------------------------------------------------
BROKER_DIR = Path(env.str("TRACECUP_BROKER_DIR", default=str(VAR_DIR / "broker")))
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or "filesystem://"


def filesystem_broker_options(folder: Path) -> dict:
    """Options of kombu's filesystem transport keeping all its files under ``folder``.

    Messages go to ``queue/``, processed ones to ``processed/`` (not kept) and
    the exchange-queue bindings to ``control/`` (kombu's default is a
    ``control`` folder in the current directory, outside the var dir).
    The folders are made by :func:`make_local_folders` (app start), not here.
    """
    folder = Path(folder)
    return {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
        # kombu polls the folder (default every 1 s): each job would wait up to a second to be picked up,
        # a second per upload when a worker scores a queue of them. A listing every 0.1 s costs nothing.
        "polling_interval": 0.1,
    }


def make_local_folders(options: dict | None = None) -> None:
    """Make the var dir and, for the filesystem broker, its folders (``options``: its transport options)."""
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        if options and key in options:
            Path(options[key]).mkdir(parents=True, exist_ok=True)


if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker_options(BROKER_DIR)
    # The filesystem transport has no broadcast replies worth waiting for.
    CELERY_WORKER_ENABLE_REMOTE_CONTROL = False
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600, "socket_connect_timeout": 3, "socket_timeout": 10}
CELERY_RESULT_BACKEND = None  # job rows carry status, progress and errors
# Jobs go to a queue per kind (contest.job_kinds); the beat sweep and anything unrouted to
# the teams' queue, which a worker always serves.
CELERY_TASK_DEFAULT_QUEUE = queues.DEFAULT_QUEUE
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ALWAYS_EAGER = _env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
TRACECUP_JOB_TIME_LIMIT = max(env.int("TRACECUP_JOB_TIME_LIMIT", default=900), 2)
TRACECUP_JOB_MAX_ATTEMPTS = 3
# A running job stamps its heartbeat this often; one silent for TRACECUP_JOB_STALE_SECONDS has lost
# its worker (killed, machine gone) and the sweep queues it again.
TRACECUP_JOB_HEARTBEAT_SECONDS = env.float("TRACECUP_JOB_HEARTBEAT_SECONDS", default=10.0)
TRACECUP_JOB_STALE_SECONDS = max(env.float("TRACECUP_JOB_STALE_SECONDS", default=60.0),
                                 3 * TRACECUP_JOB_HEARTBEAT_SECONDS)
CELERY_TASK_TIME_LIMIT = TRACECUP_JOB_TIME_LIMIT
# The soft limit (SoftTimeLimitExceeded inside the job) comes before the hard kill, also for short limits.
CELERY_TASK_SOFT_TIME_LIMIT = TRACECUP_JOB_TIME_LIMIT - min(30, max(1, TRACECUP_JOB_TIME_LIMIT // 5))
# A request that queues a job must not hang on a dead broker: one quick retry, then the job waits
# in the database (the outbox) for the sweep to send it.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
# A worker process that has grown past this (numpy's freed arrays stay in the allocator's arenas, and
# each process keeps recent traces cached) is replaced by a fresh one after its current job.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env.int("TRACECUP_WORKER_MAX_MEMORY_MB", default=900) * 1024  # KB
# Worker processes run at this niceness (contest.celery): the judge's batch work yields the CPU to the
# web processes on a shared machine, so pages stay fast while a round is judged (0: no change).
TRACECUP_WORKER_NICE = env.int("TRACECUP_WORKER_NICE", default=10)
TRACECUP_SWEEP_SECONDS = env.int("TRACECUP_SWEEP_SECONDS", default=60)
# Behind the trusted proxy (TRACECUP_TRUSTED_PROXY) an upload's deadline is checked at the time its
# request began (contest.request_start), and the sweep closes a phase this many seconds after its deadline,
# so that an upload begun in time whose body nginx is still reading arrives before the close (rules §15).
# 60 s: three times nginx's client_body_timeout; an 80 MB upload at 1.4 MB/s. "Close now" closes at once.
TRACECUP_DEADLINE_GRACE_SECONDS = max(env.float("TRACECUP_DEADLINE_GRACE_SECONDS", default=60.0), 0.0)
# Each worker's main process writes its heartbeat row this often (contest.system.heartbeat); a worker
# silent for TRACECUP_WORKER_STALE_SECONDS (three missed beats) counts as dead on the System page, in
# /readyz and in /metrics.
TRACECUP_WORKER_HEARTBEAT_SECONDS = env.float("TRACECUP_WORKER_HEARTBEAT_SECONDS", default=10.0)
TRACECUP_WORKER_STALE_SECONDS = max(env.float("TRACECUP_WORKER_STALE_SECONDS", default=30.0),
                                    2 * TRACECUP_WORKER_HEARTBEAT_SECONDS)
# The sweep has its own queue, served by every worker (contest.queues.SWEEP_QUEUE); a sweep nobody took
# within its period is dropped (the next one does the same work), so sweeps do not pile up while no
# worker runs.
CELERY_TASK_ROUTES = {"contest.tasks.sweep": {"queue": queues.SWEEP_QUEUE}}
CELERY_BEAT_SCHEDULE = {
    "sweep-jobs-and-phases": {
        "task": "contest.tasks.sweep",
        "schedule": timedelta(seconds=TRACECUP_SWEEP_SECONDS),
        "options": {"queue": queues.SWEEP_QUEUE, "expires": TRACECUP_SWEEP_SECONDS},
    },
}
# ----- backups (contest.services.backup, manage.py backup / restore) ---------------------
#: Where backups are written, how many of the newest are kept (0: all), and beat's period in seconds
#: (default daily; 0: no scheduled backup, e.g. when the database host backs itself up). The scheduled
#: backup goes to the sweep's queue, which every worker serves: with workers on several machines, set
#: the folder to one mounted on each, or run ``manage.py backup`` from the database host's cron instead.
TRACECUP_BACKUP_DIR = Path(env.str("TRACECUP_BACKUP_DIR", default=str(VAR_DIR / "backups")))
TRACECUP_BACKUP_KEEP = env.int("TRACECUP_BACKUP_KEEP", default=7)
TRACECUP_BACKUP_SECONDS = env.int("TRACECUP_BACKUP_SECONDS", default=24 * 3600)
if TRACECUP_BACKUP_SECONDS > 0:
    CELERY_BEAT_SCHEDULE["backup-database"] = {
        "task": "contest.tasks.backup",
        "schedule": timedelta(seconds=TRACECUP_BACKUP_SECONDS),
        "options": {"queue": queues.SWEEP_QUEUE, "expires": TRACECUP_BACKUP_SECONDS},
    }

# ----- e-mail (announcements) -----------------------------------------------------
# EMAIL_URL (smtp://user:password@host:587, ...) configures a real server. Without it, TRACECUP_MAIL_DIR
# (the demo sets var/mail) makes mail a file per message in that folder, readable, which the password-reset
# page names (contest.mail_folder); without either, mail is printed by the console backend into the log.
TRACECUP_MAIL_DIR = env.str("TRACECUP_MAIL_DIR", default="")
if env.str("EMAIL_URL", default=""):
    vars().update(env.email_url("EMAIL_URL"))
elif TRACECUP_MAIL_DIR:
    EMAIL_BACKEND = "contest.mail_folder.FolderEmailBackend"
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="TraceCup <noreply@localhost>")

# ----- privacy notice -----------------------------------------------------------------
#: A text file with the site's privacy notice, written by its operator (paragraphs separated by blank
#: lines), shown at /privacy/ and linked from every page's footer and the sign-up page; read at each
#: request. Empty: the page shows a default notice that describes what the platform stores.
TRACECUP_PRIVACY_NOTICE_FILE = env.str("TRACECUP_PRIVACY_NOTICE_FILE", default="")

# ----- metrics (contest.system.metrics) ------------------------------------------------
# /metrics answers only a request with "Authorization: Bearer <TRACECUP_METRICS_TOKEN>"; without a token
# set it answers 404 (off). Request counts are per process unless PROMETHEUS_MULTIPROC_DIR names a folder
# the web processes share (gunicorn: deploy/gunicorn.conf.py empties it at the server's start).
TRACECUP_METRICS_TOKEN = env.str("TRACECUP_METRICS_TOKEN", default="")

# ----- production hardening -------------------------------------------------------
if PRODUCTION:
    # A scraper may ask a web server itself over plain HTTP, past the proxy (/healthz and /readyz are
    # answered before the redirect: contest.system.health.HealthCheckMiddleware).
    SECURE_REDIRECT_EXEMPT = [r"^metrics$"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = _env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}
