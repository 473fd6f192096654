"""Routes of the HTML pages (mounted at the site root). The page language is Django's LocaleMiddleware's."""
from django.templatetags.static import static
from django.urls import path
from django.views.generic.base import RedirectView

from . import accounts, analyses, console, system, team, two_factor, views

app_name = "web"


urlpatterns = [
    path("", views.home, name="home"),
    path("i18n/setlang/", views.switch_language, name="set_language"),
    # browsers ask for /favicon.ico on every page; the icon itself is a static file
    path("favicon.ico", RedirectView.as_view(url=static("favicon.ico"), permanent=True), name="favicon"),
    # accounts
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("signup/", views.signup, name="signup"),
    path("join/", views.join_team, name="join"),
    path("token/", views.api_token, name="token"),
    path("account/", accounts.account, name="account"),
    path("account/password/", accounts.PasswordChangeView.as_view(), name="password_change"),
    path("account/token/revoke/", accounts.revoke_token, name="token_revoke"),
    path("account/delete/", accounts.delete_account, name="delete_account"),
    path("account/two-factor/", two_factor.enrol, name="two_factor"),
    path("account/two-factor/verify/", two_factor.verify, name="two_factor_verify"),
    path("privacy/", accounts.privacy, name="privacy"),
    path("password-reset/", accounts.PasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", accounts.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("password-reset/<uidb64>/<token>/", accounts.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("password-reset/done/", accounts.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("files/<int:file_id>/", team.download, name="download"),
    # public contest pages
    path("c/<slug:slug>/", views.contest_home, name="contest"),
    path("c/<slug:slug>/rules/", views.rules, name="rules"),
    path("c/<slug:slug>/leaderboard/", views.leaderboard, name="leaderboard"),
    path("c/<slug:slug>/leaderboard.csv", views.leaderboard_csv, name="leaderboard_csv"),
    path("c/<slug:slug>/attack-matrix/", views.attack_matrix, name="matrix"),
    path("c/<slug:slug>/attack-matrix.csv", views.attack_matrix_csv, name="matrix_csv"),
    path("c/<slug:slug>/awards/", views.awards, name="awards"),
    path("c/<slug:slug>/plots/", views.plots, name="plots"),
    path("c/<slug:slug>/analyses/", analyses.utility_analyses, name="analyses"),
    # a team's page: members, invitation code, name
    path("c/<slug:slug>/teams/<int:team_id>/", accounts.team_members, name="team_members"),
    path("c/<slug:slug>/teams/<int:team_id>/rename/", accounts.rename_team, name="team_rename"),
    path("c/<slug:slug>/teams/<int:team_id>/invitation-code/", accounts.new_invitation_code, name="team_new_code"),
    path("c/<slug:slug>/teams/<int:team_id>/members/<int:user_id>/remove/", accounts.remove_member,
         name="team_remove_member"),
    # team dashboard
    path("c/<slug:slug>/team/", team.dashboard, name="team"),
    path("c/<slug:slug>/team/history.csv", team.history_csv, name="team_history_csv"),
    path("c/<slug:slug>/team/datasets/<int:dataset_id>/upload/", team.upload_anonymized, name="upload_anonymized"),
    path("c/<slug:slug>/team/datasets/<int:dataset_id>/map/", team.data_map, name="data_map"),
    path("c/<slug:slug>/team/datasets/<int:dataset_id>/state.json", team.challenge_state, name="challenge_state"),
    path("c/<slug:slug>/team/uploads/<int:upload_id>/", team.upload_detail, name="upload_detail"),
    path("c/<slug:slug>/team/uploads/<int:upload_id>/status.json", team.upload_status, name="upload_status"),
    path("c/<slug:slug>/team/uploads/<int:upload_id>/select/", team.select_upload, name="select_upload"),
    path("c/<slug:slug>/team/targets/<int:public_set_id>/attack/", team.upload_attack, name="upload_attack"),
    path("c/<slug:slug>/team/targets/<int:public_set_id>/state.json", team.target_state, name="target_state"),
    path("c/<slug:slug>/team/attacks/<int:attack_id>/status.json", team.attack_status, name="attack_status"),
    path("c/<slug:slug>/team/round/<int:round_number>/attack-material.zip", team.attack_material, name="attack_material"),
    # organizer console
    path("console/", console.console_home, name="console"),
    # the whole site's workers, queues and job times (not under console/<slug>/: a contest's slug may be any word)
    path("system/", system.system, name="system"),
    path("system/live.json", system.system_live, name="system_live"),
    path("console/<slug:slug>/", console.console_contest, name="console_contest"),
    path("console/<slug:slug>/rounds/add/", console.add_round, name="console_add_round"),
    path("console/<slug:slug>/rounds/<int:round_id>/generate/", console.generate, name="console_generate"),
    path("console/<slug:slug>/rounds/<int:round_id>/training/", console.give_training, name="console_training"),
    path("console/<slug:slug>/phases/<int:phase_id>/close/", console.close_phase, name="console_close_phase"),
    path("console/<slug:slug>/phases/<int:phase_id>/schedule/", console.reschedule_phase, name="console_schedule_phase"),
    path("console/<slug:slug>/rounds/<int:round_id>/open-attack/", console.open_attack, name="console_open_attack"),
    path("console/<slug:slug>/announce/", console.announce, name="console_announce"),
    path("console/<slug:slug>/teams/add/", console.add_team, name="console_add_team"),
    path("console/<slug:slug>/open/", console.open_contest, name="console_open"),
    path("console/<slug:slug>/teams/<int:team_id>/approve/", console.approve_team, name="console_approve_team"),
    path("console/<slug:slug>/results/<str:action>/", console.results_action, name="console_results"),
    path("console/<slug:slug>/jobs/", console.console_jobs, name="console_jobs"),
    path("console/<slug:slug>/jobs/count.json", console.console_jobs_count, name="console_jobs_count"),
    path("console/<slug:slug>/jobs/table.json", console.console_jobs_table, name="console_jobs_table"),
    path("console/<slug:slug>/jobs/<int:job_id>/", console.console_job, name="console_job"),
    path("console/<slug:slug>/jobs/<int:job_id>/status.json", console.console_job_status, name="console_job_status"),
    path("console/<slug:slug>/jobs/<int:job_id>/retry/", console.retry_job, name="console_retry_job"),
    path("console/<slug:slug>/export.zip", console.export_all, name="console_export"),
]
