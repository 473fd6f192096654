"""Routes of the HTML pages (mounted at the site root). Every view runs in the page language (``i18n.localized``)."""
from django.templatetags.static import static
from django.urls import path
from django.views.generic.base import RedirectView
from django.views.i18n import set_language

from . import analyses, console, team, views
from .i18n import localized

app_name = "web"


def p(route, view, name):
    return path(route, localized(view), name=name)


urlpatterns = [
    p("", views.home, "home"),
    path("i18n/setlang/", set_language, name="set_language"),
    # browsers ask for /favicon.ico on every page; the icon itself is a static file
    path("favicon.ico", RedirectView.as_view(url=static("favicon.ico"), permanent=True), name="favicon"),
    # accounts
    p("login/", views.LoginView.as_view(), "login"),
    p("logout/", views.logout_view, "logout"),
    p("signup/", views.signup, "signup"),
    p("join/", views.join_team, "join"),
    p("token/", views.api_token, "token"),
    p("files/<int:file_id>/", team.download, "download"),
    # public contest pages
    p("c/<slug:slug>/", views.contest_home, "contest"),
    p("c/<slug:slug>/rules/", views.rules, "rules"),
    p("c/<slug:slug>/leaderboard/", views.leaderboard, "leaderboard"),
    p("c/<slug:slug>/attack-matrix/", views.attack_matrix, "matrix"),
    p("c/<slug:slug>/awards/", views.awards, "awards"),
    p("c/<slug:slug>/plots/", views.plots, "plots"),
    p("c/<slug:slug>/analyses/", analyses.utility_analyses, "analyses"),
    # team dashboard
    p("c/<slug:slug>/team/", team.dashboard, "team"),
    p("c/<slug:slug>/team/datasets/<int:dataset_id>/upload/", team.upload_anonymized, "upload_anonymized"),
    p("c/<slug:slug>/team/datasets/<int:dataset_id>/map/", team.data_map, "data_map"),
    p("c/<slug:slug>/team/datasets/<int:dataset_id>/state.json", team.challenge_state, "challenge_state"),
    p("c/<slug:slug>/team/uploads/<int:upload_id>/", team.upload_detail, "upload_detail"),
    p("c/<slug:slug>/team/uploads/<int:upload_id>/status.json", team.upload_status, "upload_status"),
    p("c/<slug:slug>/team/uploads/<int:upload_id>/select/", team.select_upload, "select_upload"),
    p("c/<slug:slug>/team/targets/<int:public_set_id>/attack/", team.upload_attack, "upload_attack"),
    p("c/<slug:slug>/team/targets/<int:public_set_id>/state.json", team.target_state, "target_state"),
    p("c/<slug:slug>/team/attacks/<int:attack_id>/status.json", team.attack_status, "attack_status"),
    p("c/<slug:slug>/team/round/<int:round_number>/attack-material.zip", team.attack_material, "attack_material"),
    # organizer console
    p("console/", console.console_home, "console"),
    p("console/<slug:slug>/", console.console_contest, "console_contest"),
    p("console/<slug:slug>/rounds/add/", console.add_round, "console_add_round"),
    p("console/<slug:slug>/rounds/<int:round_id>/generate/", console.generate, "console_generate"),
    p("console/<slug:slug>/phases/<int:phase_id>/close/", console.close_phase, "console_close_phase"),
    p("console/<slug:slug>/teams/add/", console.add_team, "console_add_team"),
    p("console/<slug:slug>/teams/<int:team_id>/approve/", console.approve_team, "console_approve_team"),
    p("console/<slug:slug>/results/<str:action>/", console.results_action, "console_results"),
    p("console/<slug:slug>/jobs/", console.console_jobs, "console_jobs"),
    p("console/<slug:slug>/jobs/table.json", console.console_jobs_table, "console_jobs_table"),
    p("console/<slug:slug>/jobs/<int:job_id>/", console.console_job, "console_job"),
    p("console/<slug:slug>/jobs/<int:job_id>/status.json", console.console_job_status, "console_job_status"),
    p("console/<slug:slug>/jobs/<int:job_id>/retry/", console.retry_job, "console_retry_job"),
    p("console/<slug:slug>/export.zip", console.export_all, "console_export"),
]
