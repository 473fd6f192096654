"""The full role x object x action matrix of ``contest.permissions`` (rules §1), before and after close."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from contest import permissions as P
from contest.models import Dataset, JudgeAttackResult, Phase, PublicSet
from contest.services import judge, results, uploads
from tests.contest.conftest import anonymize_csv, move_phase, user

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "outsider", "organizer", "superuser", "own", "other")


def _role_user(role):
    User = get_user_model()
    if role == "anonymous":
        return AnonymousUser()
    if role == "outsider":
        return User.objects.get_or_create(username="outsider")[0]
    if role == "superuser":
        return User.objects.get_or_create(username="root", defaults={"is_superuser": True, "is_staff": True})[0]
    return user({"organizer": "judge", "own": "alpha1", "other": "beta1"}[role])


def _world(contest, closed: bool):
    """Uploads of teams 1 (alpha) and 2 (beta), an attack by beta, optionally the close and attacks."""
    ds = {(d.number, d.challenge): d for d in Dataset.objects.filter(round__contest=contest)}
    a1 = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds[(1, 1)], content=anonymize_csv(ds[(1, 1)]), name="a.csv"))
    b1 = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("beta1"), dataset=ds[(2, 1)], content=anonymize_csv(ds[(2, 1)]), name="b.csv"))
    w = {"own_ds": ds[(1, 1)], "other_ds": ds[(2, 1)], "bench_ds": ds[(4, 1)], "sample_ds": ds[(5, 1)],
         "own_aset": a1, "other_aset": b1}
    if closed:
        rnd = contest.rounds.get()
        judge.close_anonymization(rnd)
        w["own_ps"] = PublicSet.objects.get(dataset=ds[(1, 1)])
        w["other_ps"] = PublicSet.objects.get(dataset=ds[(2, 1)])
        contest.judge_attacks = ["I1-rand"]
        contest.save()
        judge.run_judge_attacks(w["own_ps"])
        w["judge_out"] = JudgeAttackResult.objects.get(public_set=w["own_ps"])
        move_phase(rnd, Phase.ATTACK, -1, 5)
        from contest.services import data
        content = data.etable_csv(list(range(1, contest.users_per_set + 1)))
        w["own_attack"] = uploads.submit_attack(user=user("alpha1"), attacker=a1.team, target=w["other_ps"],
                                                kind="etable", content=content, name="e.csv")
        w["other_attack"] = uploads.submit_attack(user=user("beta1"), attacker=b1.team, target=w["own_ps"],
                                                  kind="etable", content=content, name="e.csv")
    return w


# (object, action) -> set of roles allowed, before and after the anonymization phase closes.
STAFF = {"organizer", "superuser"}
TEAMS = STAFF | {"own", "other"}
MATRIX_OPEN = {
    ("own_ds", "reference"): STAFF | {"own"},
    ("own_ds", "original"): STAFF | {"own"},
    ("other_ds", "reference"): STAFF | {"other"},
    ("other_ds", "original"): STAFF | {"other"},
    ("bench_ds", "reference"): STAFF,
    ("bench_ds", "original"): STAFF,
    ("sample_ds", "reference"): TEAMS,
    ("sample_ds", "original"): TEAMS,
    ("own_aset", "read"): STAFF | {"own"},
    ("other_aset", "read"): STAFF | {"other"},
    ("own_ds", "upload"): {"own"},
    ("sample_ds", "upload"): set(),
    ("bench_ds", "upload"): set(),
    ("contest", "results"): STAFF,
    ("contest", "manage"): STAFF,
}
MATRIX_CLOSED = dict(MATRIX_OPEN)
MATRIX_CLOSED.update({
    ("own_ds", "reference"): TEAMS,
    ("other_ds", "reference"): TEAMS,
    ("bench_ds", "reference"): TEAMS,
    ("own_ps", "pubtraces"): TEAMS,
    ("other_ps", "pubtraces"): TEAMS,
    ("own_ps", "ptable"): STAFF,
    ("other_ps", "ptable"): STAFF,
    ("judge_out", "read"): STAFF,
    ("own_attack", "read"): STAFF | {"own"},
    ("other_attack", "read"): STAFF | {"other"},
    ("other_ps", "attack"): {"own"},
    ("own_ps", "attack"): {"other"},
})


def _decide(u, obj_name, action, w, contest):
    obj = w.get(obj_name)
    if obj_name == "contest":
        return bool(P.can_view_results(u, contest) if action == "results" else P.can_manage_contest(u, contest))
    if obj_name.endswith("_ds"):
        if action == "upload":
            return bool(P.can_upload_anonymized(u, obj))
        return bool(P.can_read_dataset_file(u, obj, action))
    if obj_name.endswith("_ps"):
        if action == "attack":
            team = P.team_of(u, contest)
            return team is not None and bool(P.can_upload_attack(u, team, obj))
        return bool(P.can_read_public_set(u, obj, action))
    if obj_name.endswith("_aset"):
        return bool(P.can_read_anonymized_set(u, obj))
    if obj_name.endswith("_attack"):
        return bool(P.can_read_attack(u, obj))
    if obj_name == "judge_out":
        return bool(P.can_read_judge_attack(u, obj))
    raise AssertionError(obj_name)


def _file_of(obj_name, action, w):
    obj = w[obj_name]
    if obj_name.endswith("_ds"):
        return getattr(obj, action)
    if obj_name.endswith("_ps"):
        return getattr(obj, action)
    if obj_name == "judge_out":
        return obj.output
    return obj.file


@pytest.mark.parametrize("closed", [False, True], ids=["anonymization-open", "after-close"])
def test_permission_matrix(generated, closed):
    w = _world(generated, closed)
    matrix = MATRIX_CLOSED if closed else MATRIX_OPEN
    mismatches = []
    checked = 0
    for (obj_name, action), allowed in matrix.items():
        for role in ROLES:
            u = _role_user(role)
            got = _decide(u, obj_name, action, w, generated)
            checked += 1
            if got != (role in allowed):
                mismatches.append(f"{role} {action} {obj_name}: got {got}, expected {role in allowed}")
            # The generic file check (used by /api/files/<id>/) agrees with the typed one.
            if action in ("reference", "original", "pubtraces", "ptable", "read") and obj_name != "contest":
                generic = bool(P.can_read_file(u, _file_of(obj_name, action, w)))
                if generic != (role in allowed):
                    mismatches.append(f"{role} file-of {action} {obj_name}: got {generic}, expected {role in allowed}")
    assert checked == len(matrix) * len(ROLES)
    assert not mismatches, "\n".join(mismatches)


def test_results_public_only_after_publication(generated):
    anon = AnonymousUser()
    assert not P.can_view_results(anon, generated)
    results.publish_results(generated)
    generated.refresh_from_db()
    assert P.can_view_results(anon, generated)
    assert P.can_view_results(_role_user("outsider"), generated)


def test_unapproved_team_has_no_access(generated):
    team = user("alpha1").memberships.get().team
    team.approved = False
    team.save()
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    assert not P.can_read_dataset_file(user("alpha1"), ds, "original")
    assert not P.can_upload_anonymized(user("alpha1"), ds)
