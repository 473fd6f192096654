"""Site routes: /api/ (REST), /admin/ (Django admin), the operator's /healthz, /readyz and /metrics
(contest.system), and the HTML pages (contest.web) at the root."""
import importlib.util

from django.contrib import admin
from django.urls import include, path

from contest.system import health, metrics

#: 500: the JSON error shape under /api/, the site's page elsewhere.
handler500 = "contest.api.errors.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("contest.api.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
]

# The HTML pages are a separate package; mount them when present.
if importlib.util.find_spec("contest.web") is not None and importlib.util.find_spec("contest.web.urls") is not None:
    urlpatterns.append(path("", include("contest.web.urls")))
