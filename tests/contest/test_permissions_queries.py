"""``permissions.can_read_file`` answers with a bounded number of queries (issue 24 item 4).

It used to look the file up in every referring table (nine and more queries) and then ask each
rule's role queries again per reference. Now: one UNION finds the references, one query per kind
of referring object fetches them, and each role is looked up once per call. The count is pinned
here for every role and file of the permission matrix, and shown not to grow with the number of
objects referring to one file.
"""
from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contest import permissions
from contest.models import AnonymizedSet, StoredFile
from tests.contest.conftest import user
from tests.contest.test_permissions import _world

pytestmark = pytest.mark.django_db

#: the most queries one can_read_file may make. Measured here: 5 at most (a team member reading another
#: team's reference: the UNION, the dataset with its round and contest, the organizer check, the user's
#: team, the phase's close); the lookup before made 15 for another team's upload, 135 with 21 references.
MAX_QUERIES = 5


def _files(w, contest) -> dict[str, int]:
    rnd = contest.rounds.get()
    files = {"info_region": rnd.info_region_id, "info_time": rnd.info_time_id}
    for name in ("own_ds", "other_ds", "bench_ds", "sample_ds"):
        files[f"{name}.reference"], files[f"{name}.original"] = w[name].reference_id, w[name].original_id
    for name in ("own_ps", "other_ps"):
        files[f"{name}.pubtraces"], files[f"{name}.ptable"] = w[name].pubtraces_id, w[name].ptable_id
    for name in ("own_aset", "other_aset", "own_attack", "other_attack"):
        files[name] = w[name].file_id
    files["judge_out"] = w["judge_out"].output_id
    return files


def _queries(u, stored) -> tuple[bool, int]:
    with CaptureQueriesContext(connection) as ctx:
        allowed = bool(permissions.can_read_file(u, stored))
    return allowed, len(ctx.captured_queries)


def test_can_read_file_makes_a_bounded_number_of_queries(generated):
    w = _world(generated, closed=True)
    stored = {name: StoredFile.objects.get(pk=fid) for name, fid in _files(w, generated).items() if fid}
    users = {"anonymous": AnonymousUser(), "own": user("alpha1"), "other": user("beta1"), "organizer": user("judge")}
    counts = {}
    for role, u in users.items():
        for name, f in stored.items():
            counts[(role, name)] = _queries(u, f)
    worst = max(n for _, n in counts.values())
    assert worst <= MAX_QUERIES, sorted(counts.items(), key=lambda kv: -kv[1][1])[:5]
    # the answers are the permission matrix's (tests/contest/test_permissions.py): a few spot checks
    assert counts[("own", "own_ds.original")][0] and not counts[("own", "other_ds.original")][0]
    assert not counts[("other", "own_ps.ptable")][0] and counts[("organizer", "own_ps.ptable")][0]
    assert not any(allowed for (role, _), (allowed, _) in counts.items() if role == "anonymous")


def test_more_references_to_one_file_cost_no_more_queries(generated):
    """Twenty more objects referring to one file (another team's upload, refused to alpha): same count."""
    w = _world(generated, closed=False)
    alpha, aset = user("alpha1"), w["other_aset"]
    f = StoredFile.objects.get(pk=aset.file_id)
    allowed, one = _queries(alpha, f)
    assert not allowed
    fields = {fld.attname: getattr(aset, fld.attname) for fld in AnonymizedSet._meta.concrete_fields
              if not fld.primary_key}
    for k in range(20):  # the same stored file, as twenty more uploads of beta's data set
        AnonymizedSet.objects.create(**{**fields, "seq": aset.seq + 1 + k, "selected": False, "request_key": None})
    assert AnonymizedSet.objects.filter(file_id=f.pk).count() == 21
    allowed, many = _queries(alpha, f)
    assert not allowed and many == one <= MAX_QUERIES
