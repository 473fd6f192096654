"""Parsed copies (contest.services.data, ParsedCopy): a set's trace files are parsed once for every
worker process; the copy is a cache the CSV always wins over, and a secret no one downloads."""
from __future__ import annotations

import numpy as np
import pytest
from django.test import Client

from contest import permissions as P
from contest.models import Dataset, ParsedCopy
from contest.services import data, storage
from scoring import io as sio
from scoring.traces import Traces
from tests.contest.test_permissions import ROLES, _role_user, _world

pytestmark = pytest.mark.django_db


def _parse_refused(*_a, **_k):
    raise AssertionError("parsed the CSV again")


def test_the_first_read_stores_a_copy_and_another_process_loads_it_without_parsing(generated, monkeypatch):
    ds = Dataset.objects.filter(round__contest=generated, kind=Dataset.TEAM).select_related("original").first()
    grid = generated.grid()
    data._CACHE.clear()
    parsed = sio.read_traces(storage.read_csv_bytes(ds.original), grid)
    first = data.traces(ds.original, grid)
    copy = ParsedCopy.objects.get(source=ds.original)
    assert copy.reader == "traces/1" and copy.arrays.content_type == "application/octet-stream"
    data._CACHE.clear()  # what another worker process starts with
    monkeypatch.setattr(sio, "read_traces", _parse_refused)
    loaded = data.traces(ds.original, grid)
    for a in (first, loaded):
        assert a.regions.dtype == parsed.regions.dtype and np.array_equal(a.regions, parsed.regions)
        assert np.array_equal(a.user_ids, parsed.user_ids) and np.array_equal(a.time_ids, parsed.time_ids)
    assert ParsedCopy.objects.filter(source=ds.original).count() == 1


def test_a_copy_for_another_grid_is_not_used(generated):
    """A file is validated against its grid: a contest with another grid parses it for itself."""
    import dataclasses
    ds = Dataset.objects.filter(round__contest=generated, kind=Dataset.TEAM).select_related("reference").first()
    grid = generated.grid()
    data.traces(ds.reference, grid)
    wider = dataclasses.replace(grid, nx=grid.nx * 2)
    data._CACHE.clear()
    data.traces(ds.reference, wider)
    assert ParsedCopy.objects.filter(source=ds.reference).count() == 2


def test_a_copy_that_does_not_load_is_passed_over_for_the_csv(generated, monkeypatch):
    """The copy is a cache: one that does not load (here: bytes that are not the arrays; in life a
    layout this code does not know) is logged and the CSV parsed, and nothing fails."""
    ds = Dataset.objects.filter(round__contest=generated, kind=Dataset.TEAM).select_related("original").first()
    grid = generated.grid()
    data._CACHE.clear()
    bad = storage.store_bytes(b"user_id,time_id,reg_id\n1,1,1\n", "bad.npy")
    # the append-only copy rows cannot be edited: the lookup finds a stand-in copy instead
    monkeypatch.setattr(ParsedCopy.objects, "filter", lambda **kw: _StandIn(
        ParsedCopy(source=ds.original, reader="traces/1", grid="x", arrays=bad)))
    got = data.traces(ds.original, grid)
    truth = sio.read_traces(storage.read_csv_bytes(ds.original), grid)
    assert isinstance(got, Traces) and np.array_equal(got.regions, truth.regions)


class _StandIn:
    def __init__(self, row):
        self.row = row

    def select_related(self, *_a):
        return self

    def first(self):
        return self.row


def test_parsed_copies_of_secrets_are_read_by_no_one_but_superusers(generated):
    data._CACHE.clear()  # (this process read the same replayed files in earlier tests)
    w = _world(generated, closed=True)
    copies = list(ParsedCopy.objects.select_related("arrays"))
    assert {w["own_ds"].original_id, w["own_ds"].reference_id, w["own_ps"].pubtraces_id} <= \
        {c.source_id for c in copies}
    for c in copies:
        for role in ROLES:
            assert bool(P.can_read_file(_role_user(role), c.arrays)) == (role == "superuser"), (role, c)
    organizer = Client()
    organizer.force_login(_role_user("organizer"))
    original_copy = next(c for c in copies if c.source_id == w["own_ds"].original_id)
    for url in (f"/api/files/{original_copy.arrays_id}/", f"/files/{original_copy.arrays_id}/"):
        assert organizer.get(url).status_code in (403, 404), url
