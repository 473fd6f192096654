"""API routes, mounted at /api/ (schema: /api/schema/, docs: /api/docs/)."""
from django.urls import path, re_path
from drf_spectacular.settings import patched_settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from contest.api import errors
from contest.api import views as v


class ApiDocs(SpectacularSwaggerSplitView):
    """Swagger UI without deep links: a deep link is an anchor inside each operation's toggle button, a
    control inside a control that a keyboard or a screen reader cannot use on its own."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        with patched_settings({"SWAGGER_UI_SETTINGS": {"deepLinking": False}}):
            return super().get(request, *args, **kwargs)


urlpatterns = [
    path("auth/token/", v.ObtainToken.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI served from this site's static files (drf-spectacular-sidecar): the machines have no internet.
    # The split view serves its start script as a file (/api/docs/?script), so the page passes the site's
    # Content-Security-Policy (no inline script, no inline style: templates/api/swagger_ui.html).
    path("docs/", ApiDocs.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
         name="api-docs"),
    path("contests/", v.ContestList.as_view(), name="api-contests"),
    path("contests/<slug:slug>/", v.ContestDetail.as_view(), name="api-contest"),
    path("contests/<slug:slug>/me/", v.MyTeam.as_view(), name="api-me"),
    path("contests/<slug:slug>/datasets/", v.DatasetList.as_view(), name="api-datasets"),
    path("contests/<slug:slug>/public-sets/", v.PublicSetList.as_view(), name="api-public-sets"),
    path("contests/<slug:slug>/anonymized-sets/", v.AnonymizedSetList.as_view(), name="api-anonymized-sets"),
    path("contests/<slug:slug>/attacks/", v.AttackList.as_view(), name="api-attacks"),
    path("contests/<slug:slug>/scores/", v.MyScores.as_view(), name="api-my-scores"),
    path("contests/<slug:slug>/jobs/", v.JobList.as_view(), name="api-jobs"),
    path("contests/<slug:slug>/results/", v.Results.as_view(), name="api-results"),
    path("contests/<slug:slug>/leaderboard/", v.Results.as_view(part="leaderboard"), name="api-leaderboard"),
    path("contests/<slug:slug>/attack-matrix/", v.Results.as_view(part="matrix"), name="api-attack-matrix"),
    path("contests/<slug:slug>/awards/", v.Results.as_view(part="awards"), name="api-awards"),
    path("contests/<slug:slug>/announcements/", v.Announcements.as_view(), name="api-announcements"),
    path("contests/<slug:slug>/rescore/", v.ContestRescore.as_view(), name="api-rescore"),
    path("contests/<slug:slug>/snapshot/", v.ContestSnapshot.as_view(), name="api-snapshot"),
    path("contests/<slug:slug>/publish/", v.ContestPublish.as_view(), name="api-publish"),
    path("contests/<slug:slug>/unpublish/", v.ContestUnpublish.as_view(), name="api-unpublish"),
    path("contests/<slug:slug>/rounds/", v.RoundAdd.as_view(), name="api-round-add"),
    path("contests/<slug:slug>/teams/", v.TeamAdd.as_view(), name="api-team-add"),
    path("teams/join/", v.TeamJoin.as_view(), name="api-team-join"),
    path("teams/<int:pk>/approve/", v.TeamApprove.as_view(), name="api-team-approve"),
    path("phases/<int:pk>/", v.PhaseSchedule.as_view(), name="api-phase"),
    path("phases/<int:pk>/close/", v.PhaseClose.as_view(), name="api-phase-close"),
    path("jobs/<int:pk>/retry/", v.JobRetry.as_view(), name="api-job-retry"),
    path("rounds/<int:pk>/generate/", v.RoundGenerate.as_view(), name="api-round-generate"),
    path("rounds/<int:pk>/close/", v.RoundClose.as_view(), name="api-round-close"),
    path("rounds/<int:pk>/training/", v.RoundTraining.as_view(), name="api-round-training"),
    path("rounds/<int:pk>/open-attack/", v.RoundOpenAttack.as_view(), name="api-round-open-attack"),
    path("rounds/<int:pk>/info_region.csv", v.RoundFile.as_view(), {"which": "info_region"}, name="api-info-region"),
    path("rounds/<int:pk>/info_time.csv", v.RoundFile.as_view(), {"which": "info_time"}, name="api-info-time"),
    path("datasets/<int:pk>/anonymized-sets/", v.AnonymizedSetUpload.as_view(), name="api-anonymized-upload"),
    path("datasets/<int:pk>/reference/", v.DatasetFile.as_view(), {"which": "reference"}, name="api-reference"),
    path("datasets/<int:pk>/original/", v.DatasetFile.as_view(), {"which": "original"}, name="api-original"),
    path("anonymized-sets/<int:pk>/", v.AnonymizedSetDetail.as_view(), name="api-anonymized-set"),
    path("anonymized-sets/<int:pk>/preview/", v.AnonymizedSetPreview.as_view(), name="api-anonymized-preview"),
    path("anonymized-sets/<int:pk>/preview.csv", v.AnonymizedSetPreviewCSV.as_view(), name="api-anonymized-preview-csv"),
    path("anonymized-sets/<int:pk>/select/", v.AnonymizedSetSelect.as_view(), name="api-anonymized-select"),
    path("public-sets/<int:pk>/attacks/", v.AttackUpload.as_view(), name="api-attack-upload"),
    path("public-sets/<int:pk>/pubtraces/", v.PublicSetFile.as_view(), {"which": "pubtraces"}, name="api-pubtraces"),
    path("public-sets/<int:pk>/ptable/", v.PublicSetFile.as_view(), {"which": "ptable"}, name="api-ptable"),
    path("attacks/<int:pk>/", v.AttackDetail.as_view(), name="api-attack"),
    path("jobs/<int:pk>/", v.JobDetail.as_view(), name="api-job"),
    path("files/<int:pk>/", v.FileDownload.as_view(), name="api-file"),
    # Last: any other address under /api/ answers the JSON error shape (also with DEBUG on).
    re_path(r"^(?P<rest>.*)$", errors.not_found, name="api-not-found"),
]
