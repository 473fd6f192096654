"""The results snapshot's schema (``contest.services.results_snapshot``): one builder, one reader, pinned.

- The reader reads what the builder writes back into the same JSON, and refuses JSON of another
  version, without a version, with a key the schema does not know or without one it needs.
- Golden: a round played deterministically (the play of ``tests/contest/test_results_combine.py``:
  the round's figures, every team's two sets, the close with its judge attacks and set analyses, two
  team attacks; the close's pseudonymization seeded and the upload times pinned) gives a snapshot whose JSON equals
  ``tests/contest/golden/results_snapshot.json`` byte for byte. The one value that depends on the
  database rather than the play, an analysed set's ``set_id`` (a row id: the sequences move with
  every test that ran before), is written as its data set's ``"<challenge>-<team>"``.
- The results pages and the API read the schema's objects, never the stored JSON: no ``.get(...)``
  on a snapshot's data in the views.

An intended change of the results (a scoring rule, the interval method, a figure) changes the golden
file: regenerate it with ``TRACECUP_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest -p no:xdist
tests/contest/test_results_snapshot.py -k golden`` and review its diff before committing it.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

import pytest

from contest.models import AnonymizedSet, Attack, JudgeAttackResult
from contest.services import judge, results, results_snapshot
from contest.services.results_snapshot import SnapshotSchemaError
from scoring.pseudonymize import pseudonymize
from scoring.seeds import derived_seed
from tests.contest.conftest import built_on_generated
from tests.contest.test_results_combine import _play
from tests.contest.test_snapshot_schema import _two_rounds

GOLDEN = Path(__file__).parent / "golden" / "results_snapshot.json"
REGENERATE = os.environ.get("TRACECUP_REGENERATE_GOLDEN") == "1"
T0 = datetime(2019, 10, 1, 9, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]


def _stored(res=None) -> dict:
    """A version-2 snapshot's JSON as the migration left old ones: the judge's results, standing and
    correlation, none of the later parts."""
    return results.upgraded_snapshot_data((res or _two_rounds()).to_dict(), {1: "Preliminary", 2: "Final"})


def test_what_is_read_is_written_back_unchanged():
    stored = _stored()
    snap = results_snapshot.read(stored)
    assert results_snapshot.to_json(snap) == stored
    assert snap.analyses is None and snap.uncertainty is None and snap.team_names is None
    assert [p.team for p in snap.leaderboard("total")] == [p["team"] for p in stored["leaderboards"]["total"]]
    assert snap.sets_of(2)[0].set.key == "r2-t2-c1" and snap.counts_round(2) and not snap.counts_round(3)


def test_the_builder_checks_every_part_and_its_json_reads_back():
    res = _two_rounds()
    stored = _stored(res)
    built = results_snapshot.build(
        res, contest="tc", team_names={1: "Alpha"}, round_names={1: "Preliminary", 2: "Final"},
        standing=stored["standing"], correlation=stored["correlation"],
        analyses={"rounds": {}, "error": "RuntimeError: no POIs"}, sample_anonymizers={"error": "E"},
        uncertainty={"error": "ValueError: x"})
    data = results_snapshot.to_json(built)
    assert data["version"] == results_snapshot.VERSION and data["team_names"] == {"1": "Alpha"}
    assert data["analyses"] == {"rounds": {}, "error": "RuntimeError: no POIs"}
    assert results_snapshot.to_json(results_snapshot.read(data)) == data
    with pytest.raises(SnapshotSchemaError, match="'sd'"):
        results_snapshot.build(res, contest="tc", team_names={}, round_names={}, standing=stored["standing"],
                               correlation={}, analyses={"rounds": {}}, sample_anonymizers={},
                               uncertainty={"method": "m", "replicates": 1, "level": 0.95, "tie_probability": 0.5,
                                            "sets": {}, "leaderboards": {}, "awards": {}, "sd": 1})


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(version=3), "version 3: this site reads version 2 only"),
    (lambda d: d.pop("version"), "without a version"),
    (lambda d: d.update(extra=1), "unknown key 'extra'"),
    (lambda d: d.pop("standing"), "'standing' is missing"),
    (lambda d: d["sets"][0].pop("s_u"), "SetEntry: the key 's_u' is missing"),
    (lambda d: d["sets"][0]["set"].update(key="r9-t9-c1"), "key 'r9-t9-c1' is not 'r1-t1-c1'"),
])
def test_the_reader_refuses_what_is_not_a_snapshot_of_its_version(change, message):
    data = _stored()
    change(data)
    with pytest.raises(SnapshotSchemaError, match=re.escape(message)):
        results_snapshot.read(data)


@pytest.fixture
def played(request):
    return built_on_generated(request, "played", _seeded_play)


def _seeded_play(generated, capture):
    """:func:`_play` with the close's pseudonymization seeded: the platform draws it from the system's
    secure source (rules §6), and a team's attack scores, the judge's ties and so every figure after
    them follow the permutation drawn."""
    seeded = functools.partial(pseudonymize, seed=derived_seed(generated.seed, "golden pseudonymization"))
    with mock.patch.object(judge, "pseudonymize", seeded):
        return _play(generated, capture)


def _pin_times(contest) -> None:
    """Every upload and judge attack at a time of the play's order, not of the clock: a set at T0 plus its
    team's and challenge's minutes, an attack and a judge attack a day later plus their order."""
    for aset in AnonymizedSet.objects.filter(dataset__round__contest=contest).select_related("dataset"):
        minutes = 10 * aset.dataset.number + aset.dataset.challenge + (0 if aset.final else 5)
        AnonymizedSet.objects.filter(pk=aset.pk).update(created_at=T0 + timedelta(minutes=minutes))
    for i, pk in enumerate(Attack.objects.filter(target__dataset__round__contest=contest)
                           .order_by("attacker__number", "target__dataset__number", "target__dataset__challenge")
                           .values_list("pk", flat=True)):
        Attack.objects.filter(pk=pk).update(created_at=T0 + timedelta(days=1, minutes=i))
    judge = JudgeAttackResult.objects.filter(public_set__dataset__round__contest=contest)
    for i, pk in enumerate(judge.order_by("public_set__dataset__number", "public_set__dataset__challenge",
                                          "algorithm", "kind").values_list("pk", flat=True)):
        JudgeAttackResult.objects.filter(pk=pk).update(created_at=T0 + timedelta(days=1, hours=1, minutes=i))


def _golden_text(snap) -> str:
    """The snapshot's JSON as the golden file holds it (keys sorted, one value a line), ``set_id`` as
    its data set's ``"<challenge>-<team>"``."""
    data = results_snapshot.to_json(results_snapshot.read(snap.data))
    sets = {a.pk: f"{a.dataset.challenge}-{a.dataset.number}"
            for a in AnonymizedSet.objects.filter(dataset__round__contest=snap.contest).select_related("dataset")}
    for rnd in (data.get("analyses") or {}).get("rounds", {}).values():  # the JSON, not the schema's objects
        for row in rnd["utility"]:
            row["set_id"] = sets[row["set_id"]]
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.django_db
def test_a_played_round_gives_the_golden_snapshot(played):
    _pin_times(played)
    assert Attack.objects.filter(target__dataset__round__contest=played).count() == 2  # the play ran as before
    text = _golden_text(results.snapshot(played))
    if REGENERATE:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), (
        "the results snapshot of the played round changed; if that is intended, regenerate "
        "tests/contest/golden/results_snapshot.json (TRACECUP_REGENERATE_GOLDEN=1, see this module) "
        "and review its diff")


#: Snapshot keys that other JSON the views read uses too (an issue's params, a request's fields).
SHARED_WORDS = {"contest", "params", "reference", "version"}


def _snapshot_keys() -> set[str]:
    """The snapshot's own keys: its top level's and every key that holds a record, a list or an object
    (the ones the ``.get(...) or {}`` chains walked through), but :data:`SHARED_WORDS`."""
    records = [v for v in vars(results_snapshot).values()
               if isinstance(v, type) and issubclass(v, results_snapshot._Record)]
    names = {r.__name__ for r in records} | {"dict", "tuple", "SetRef"}
    holders = {f.name for cls in records for f in dataclasses.fields(cls)
               if any(re.search(rf"\b{re.escape(n)}\b", str(f.type)) for n in names)}
    return ({f.name for f in dataclasses.fields(results_snapshot.SnapshotData)} | holders) - SHARED_WORDS


def _reads_of_stored_json() -> re.Pattern:
    """A line that reads a snapshot's JSON itself: ``.get("<a snapshot key>")`` (the ``.get(...) or {}``
    chains), ``snap.data`` but as ``results_snapshot.read``'s argument, ``.data.get(`` or ``rv.data``."""
    keys = "|".join(sorted(map(re.escape, _snapshot_keys())))
    return re.compile(rf"""\.get\(["']({keys})["']|(?<!read\()\bsnap(shot)?\.data\b|\.data\.get\(|\brv\.data\b""")


def test_the_results_views_read_the_schema_not_the_stored_json():
    """No view or API view reads a snapshot's stored JSON but through ``results_snapshot.read``."""
    chains = _reads_of_stored_json()
    found = []
    for path in [*sorted((ROOT / "contest" / "web").glob("*.py")), ROOT / "contest" / "api" / "views.py"]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if chains.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_scan_finds_the_old_reads():
    """The scan above catches the reads the views held before the schema (a line of each kind)."""
    chains = _reads_of_stored_json()
    old = ['stored = (rv.data.get("correlation") or {}).get(str(choice)) or {"r": None, "n_sets": 0}',
           'rows = ((x.get("uncertainty") or {}).get("leaderboards") or {}).get(name) or []',
           'data, awards = snap.data, S.AwardSerializer(snap.awards.select_related("team"), many=True).data']
    assert all(chains.search(line) for line in old)
    assert not chains.search("return ResultsView(contest, results_snapshot.read(snap.data)), preview")
