"""Organizer tooling and deployment: create/export/import commands, check --deploy, docker-compose."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from contest.models import Contest, Dataset, Phase
from contest.secret_key import DEVELOPMENT_KEY
from contest.services import judge, results, storage, uploads
from tests.contest.conftest import anonymize_csv, move_phase, user

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_create_contest_command(tmp_path):
    out = io.StringIO()
    call_command("create_contest", str(ROOT / "contest" / "example_contest.yaml"), stdout=out)
    assert "created contest 'tracecup-2026'" in out.getvalue()
    assert Contest.objects.get(slug="tracecup-2026").rounds.count() == 2


@pytest.mark.django_db
def test_export_import_round_trip_byte_for_byte(generated, tmp_path):
    # a contest with uploads, a public set, judge results, an attack and a published snapshot
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                                               content=anonymize_csv(ds), name="a.csv"))
    generated.judge_attacks = ["I1-rand", "T1-rand"]
    generated.save()
    rnd = generated.rounds.get()
    for ps in judge.close_anonymization(rnd):
        judge.run_judge_attacks(ps)
    move_phase(rnd, Phase.ATTACK, -1, 5)
    ps = ds.public_set
    from contest.services import data
    uploads.score_attack(uploads.submit_attack(
        user=user("beta1"), attacker=user("beta1").memberships.get().team, target=ps, kind="etable",
        content=data.etable_csv(list(range(1, generated.users_per_set + 1))), name="e.csv"))
    results.publish_results(generated)

    first = tmp_path / "first.zip"
    call_command("export_contest", "tc", str(first), stdout=io.StringIO())
    call_command("import_contest", str(first), "--slug", "tc-copy", stdout=io.StringIO())
    second = tmp_path / "second.zip"
    call_command("export_contest", "tc-copy", str(second), stdout=io.StringIO())

    def load(path):
        with zipfile.ZipFile(path) as z:
            doc = json.loads(z.read("contest.json"))
            files = {n: z.read(n) for n in z.namelist() if n.startswith("files/")}
        return doc, files

    d1, f1 = load(first)
    d2, f2 = load(second)
    # files are stored once per content (an unobfuscated upload's population figure is O's)
    assert f1 == f2 and len(f1) == len({f["sha256"] for f in d1["files"]}) > 20
    d2["contest"]["slug"] = "tc"
    a1, a2 = d1.pop("audit"), d2.pop("audit")
    assert d1 == d2
    assert a2[:len(a1)] == a1 and a2[-1]["action"] == "import_contest"
    copy = Contest.objects.get(slug="tc-copy")
    for ds1, ds2 in zip(Dataset.objects.filter(round__contest=generated).order_by("pk"),
                        Dataset.objects.filter(round__contest=copy).order_by("pk")):
        assert storage.read_bytes(ds1.original) == storage.read_bytes(ds2.original)
    # the imported contest computes the same results from its imported score rows
    assert results.compute(copy).to_dict() == results.compute(generated).to_dict()


def _run(args, env_extra, timeout=120):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    env.update(env_extra)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)



@pytest.mark.django_db
def test_import_refuses_a_file_larger_than_the_archive_declares_and_keeps_nothing(tmp_path):
    """A member is read under the size the archive's index declares for it (the one bounded zip
    reader of scoring.io), so an archive whose member was swapped for a larger one is refused with
    the file named, and the import leaves no contest and no stored file behind."""
    from django.core.management.base import CommandError

    from contest.models import StoredFile
    from contest.services.setup import create_contest
    from tests.contest.conftest import contest_spec

    create_contest(contest_spec(slug="small"))
    good = tmp_path / "good.zip"
    call_command("export_contest", "small", str(good), stdout=io.StringIO())
    with zipfile.ZipFile(good) as z:
        members = {n: z.read(n) for n in z.namelist()}
        doc = json.loads(members["contest.json"])
    # the index lists a 10-byte file; the archive's member of that name inflates to 1 MB
    row = {"name": "tiny.csv", "sha256": "0" * 64, "size": 10, "content_type": "text/csv",
           "uploaded_by": None, "created_at": None}
    doc["files"].append(row)
    members["contest.json"] = json.dumps(doc).encode()
    members[f"files/{row['sha256']}"] = b"x" * (int(row["size"]) + 1_000_000)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in members.items():
            z.writestr(name, content)
    before = StoredFile.objects.count()
    with pytest.raises(CommandError, match=f"larger than|at most {int(row['size']):,}"):
        call_command("import_contest", str(bad), "--slug", "small-copy", stdout=io.StringIO())
    assert not Contest.objects.filter(slug="small-copy").exists()
    assert StoredFile.objects.count() == before

@pytest.mark.slow
def test_check_deploy_is_clean_under_production_settings():
    r = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
             {"TRACECUP_PRODUCTION": "1", "DEBUG": "0", "ALLOWED_HOSTS": "contest.example.org",
              "SECRET_KEY": "x" * 20 + "production-secret-for-the-check-only-0123456789"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout


def test_production_requires_a_secret_key():
    r = _run(["manage.py", "check"], {"TRACECUP_PRODUCTION": "1", "DEBUG": "0", "SECRET_KEY": ""})
    assert r.returncode != 0 and "SECRET_KEY" in r.stderr
    # with DEBUG on too: the repository's development key used to sign production sessions silently
    r = _run(["manage.py", "check"], {"TRACECUP_PRODUCTION": "1", "DEBUG": "1", "SECRET_KEY": ""})
    assert r.returncode != 0 and "SECRET_KEY must be set" in r.stderr


@pytest.mark.parametrize(("key", "reason"), [
    (DEVELOPMENT_KEY, "development key"),
    ("django-insecure-" + "q7#k2v!x9m@p4z&w" * 4, "startproject"),
    ("short-but-varied-0123456789", "27 characters long"),
    ("ab" * 40, "2 different characters"),
])
def test_production_refuses_a_known_or_weak_secret_key(key, reason):
    """The repository's own development key signed production sessions with TRACECUP_PRODUCTION=1: anyone
    with the source could sign a session cookie for any account."""
    r = _run(["manage.py", "check"], {"TRACECUP_PRODUCTION": "1", "DEBUG": "0", "SECRET_KEY": key})
    assert r.returncode != 0 and "SECRET_KEY is" in r.stderr and reason in r.stderr, r.stderr[-1500:]
    assert "secrets.token_urlsafe" in r.stderr  # and says how to make one


@pytest.mark.slow
def test_check_deploy_reports_the_development_key():
    """``check --deploy`` said nothing of the development key (Django's own check sees a long, varied key)."""
    env = {"DEBUG": "0", "ALLOWED_HOSTS": "contest.example.org"}
    for key in (DEVELOPMENT_KEY, ""):  # given, and the default outside production
        r = _run(["manage.py", "check", "--deploy"], {**env, "SECRET_KEY": key})
        assert r.returncode != 0 and "contest.E001" in r.stderr and "development key" in r.stderr, r.stderr[-1500:]
    r = _run(["manage.py", "check", "--deploy"], {**env, "SECRET_KEY": "x" * 20 + "production-secret-0123456789abcdefghij"})
    assert "contest.E001" not in r.stdout + r.stderr


def test_docker_compose_commands_and_modules_exist():
    import importlib.util

    from django.core.management import get_commands

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)
    for name in ("migrate", "web", "worker", "beat"):  # every app service builds the project's one image
        build = services[name]["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).resolve() == (ROOT / "Dockerfile").resolve(), name
    dockerfile = (ROOT / "Dockerfile").read_text()
    # the production image installs the runtime only: no test runner, browser driver or linter
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert installs and all("-r requirements.txt" in line for line in installs), installs
    assert "requirements-dev" not in dockerfile
    runtime = (ROOT / "requirements.txt").read_text().lower()
    assert not any(tool in runtime for tool in ("pytest", "playwright", "hypothesis", "pot==", "ruff"))
    commands = get_commands()
    for name in ("web", "worker", "beat", "migrate"):
        if name not in services:
            continue
        cmd = services[name]["command"]
        words = cmd if isinstance(cmd, list) else cmd.split()
        text = " ".join(words)
        if "gunicorn" in text:
            module, _, attr = next(w for w in words if ":" in w and "." in w).partition(":")
            assert importlib.util.find_spec(module) is not None
            assert hasattr(__import__(module, fromlist=[attr]), attr)
        if "celery" in text:
            app = words[words.index("-A") + 1]
            assert importlib.util.find_spec(app) is not None
            assert hasattr(__import__(app, fromlist=["celery_app"]), "celery_app")
        for i, w in enumerate(words):
            if w == "manage.py":
                assert words[i + 1] in commands, f"{name}: unknown command {words[i + 1]}"
        env = services[name].get("environment", {})
        assert "DATABASE_URL" in env and "CELERY_BROKER_URL" in env
    assert "postgres" in services["web"]["environment"]["DATABASE_URL"]
    assert services["worker"]["environment"]["CELERY_BROKER_URL"].startswith("redis://")
    beat = services["beat"]["command"]
    assert "beat" in (beat if isinstance(beat, str) else " ".join(beat))
    from django.conf import settings
    assert settings.CELERY_BEAT_SCHEDULE["sweep-jobs-and-phases"]["task"] == "contest.tasks.sweep"


@pytest.mark.slow
def test_importing_the_settings_makes_no_folder_and_the_app_makes_them(tmp_path):
    var = tmp_path / "var"
    r = _run(["-c", "import contest.settings"], {"TRACECUP_VAR_DIR": str(var)})
    assert r.returncode == 0, r.stderr
    assert not var.exists()
    r = _run(["manage.py", "check"], {"TRACECUP_VAR_DIR": str(var), "CELERY_BROKER_URL": ""})
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (var / "broker").iterdir()) == ["control", "processed", "queue"]


def test_docker_compose_shares_one_cache_between_web_processes():
    """Every process of the stack gets the same CACHE_URL on the compose Redis (issues 23, 24): the web
    processes share the stored pages (contest.web.page_cache), so a page rendered by one is served by all."""
    import environ
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    url = compose["x-app-env"]["CACHE_URL"]
    assert url.startswith("redis://redis:6379/") and url != compose["x-app-env"]["CELERY_BROKER_URL"]
    assert environ.Env.cache_url_config(url)["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    for name in ("web", "worker", "worker-teams", "beat"):
        assert compose["services"][name]["environment"]["CACHE_URL"] == url, name
