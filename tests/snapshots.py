"""Database states built once per test session and laid again, row for row, in each test that needs them.

A played contest (generated data, uploads scored, the phase closed, the judge's attacks) takes
seconds to tens of seconds to build, and a test's database changes are rolled back when it ends,
so before this module every test that needed one built it again. Now the first test that asks for a
state builds it for real, inside its own transaction as before; :func:`built_once` then copies every
row of every table the build wrote to, and later tests insert that copy into their own transaction
(:meth:`Snapshot.restore`): the same rows, ids, stored files and times, in about a tenth of a second
instead of the build's seconds.

The tables that migrations fill (content types, permissions: non-empty in a fresh test database,
:func:`migration_tables`) are never copied: every test database has them already, and a test that
flushes the database (``transaction=True``) keeps them (tests/conftest.py ``KEPT_BY_FLUSH``).

Everything a build makes is in the database (stored files, built bundles included), so the rows
are the whole state. What a snapshot does not hold: caches (cleared before every test anyway) and
Python objects (the fixture hands each test a fresh instance read from its own database).

The key of a state must name everything its build depends on: the fixture's name and, for a
module's own state, the module (``request.module.__name__``).

The parallel run's test processes share the states named by a plain string (the demo contest, the
generated contest, the closed one), which the files of several processes ask for: the first process
to need one builds it while the others wait for it, and writes its rows to a folder of the run
(:func:`share_between_processes`) that the others read. The demo contest alone took each process
that needed it about ten CPU-seconds to build. A module's own state (a tuple key) is asked for by
one file, which runs in one process (``--dist loadfile``), and stays in that process.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.apps import apps
from django.db import connection, models, transaction
from django.db.models.fields import AutoFieldMixin
from django.utils import timezone

#: The states built so far in this test process: key -> :class:`Snapshot`.
_BUILT: dict[Any, Snapshot] = {}
#: The folder this run's test processes share their named states in (None: this process keeps its own).
_SHARED: list[Path] = []


def _tables() -> list[type[models.Model]]:
    """Every concrete model with a table of its own, many-to-many through tables included."""
    return [m for m in apps.get_models(include_auto_created=True)
            if m._meta.managed and not m._meta.proxy and not m._meta.swapped]


@dataclass
class _Rows:
    """The rows of one table: its concrete fields and each row's values as the model reads them."""
    model: type[models.Model]
    fields: list[models.Field]
    rows: list[tuple] = field(default_factory=list)

    @functools.cached_property
    def top(self) -> int | None:
        """The highest id of the rows when the table's id comes from a sequence (an auto field), else None;
        found once, since the copied rows never change."""
        pk = self.model._meta.pk
        if not self.rows or not isinstance(pk, AutoFieldMixin):
            return None
        column = self.fields.index(pk)
        return max(row[column] for row in self.rows)

    def insert(self, later: timedelta) -> None:
        """INSERT every row, each time ``later`` than it was built (see :meth:`Snapshot.restore`)."""
        if not self.rows:
            return
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self.fields)
        marks = ", ".join(["%s"] * len(self.fields))
        sql = f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) VALUES ({marks})"  # noqa: S608 - names from the models
        moved = [isinstance(f, models.DateTimeField) for f in self.fields]
        with connection.cursor() as cursor:
            cursor.executemany(sql, [
                tuple(f.get_db_prep_save(v + later if move and v is not None else v, connection)
                      for f, v, move in zip(self.fields, row, moved, strict=True))
                for row in self.rows])


@dataclass
class Snapshot:
    """The rows a build added, table by table, and what the build returned (a model instance's class
    and primary key, or a plain value)."""
    tables: list[_Rows]
    result: Any
    built_at: datetime

    def __getstate__(self) -> dict:
        """What another test process needs to restore the state: each model by its label (a many-to-many
        table's model exists only in the app registry), its rows, and the result."""
        return {"tables": [(t.model._meta.label, t.rows) for t in self.tables],
                "result": self.result, "built_at": self.built_at}

    def __setstate__(self, state: dict) -> None:
        self.tables = [_Rows(m := apps.get_model(label), list(m._meta.concrete_fields), rows)
                       for label, rows in state["tables"]]
        self.result, self.built_at = state["result"], state["built_at"]

    def restore(self) -> Any:
        """Insert the rows into the current (test) transaction; returns the build's result, read anew.

        Every time in the rows moves by the time since the build, so the state is as old now as it
        was when built: a phase that opened an hour before is still an hour open, and a job queued a
        moment before is not stale to the sweep (a job's age decides whether it is sent again)."""
        later = timezone.now() - self.built_at
        for table in self.tables:  # foreign keys are checked at commit (deferred), so any order does
            table.insert(later)
        _advance_sequences(self.tables)
        return _read_result(self.result)


def _advance_sequences(tables: list[_Rows]) -> None:
    """Move each PostgreSQL id sequence past the ids just inserted, so the test's own rows get new ids.

    A sequence is not rolled back with the build's transaction, so it is normally past the copied ids
    already; but a test that migrates a table away and back (tests/contest/test_storage.py) makes that
    table's sequence anew, from 1, and the next restore's rows then held the ids the test's own inserts
    were given next ("duplicate key value violates unique constraint", in whichever later test of the
    process stored a file). SQLite gives max(id) + 1 by itself."""
    tops = [(t.model._meta.db_table, t.model._meta.pk.column, t.top) for t in tables if t.top is not None]
    if connection.vendor != "postgresql" or not tops:
        return
    moves = ", ".join("setval(pg_get_serial_sequence(%s, %s), GREATEST(%s, nextval(pg_get_serial_sequence(%s, %s))))"
                      for _ in tops)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {moves}", [v for table, column, top in tops for v in (table, column, top, table, column)])


def _copy_rows(model: type[models.Model]) -> _Rows:
    """Every row of ``model``, as the model reads its values (prepared for the INSERT at each restore;
    PostgreSQL's binary values as bytes, which another process can read)."""
    fields = list(model._meta.concrete_fields)
    rows = model._base_manager.order_by("pk").values_list(*[f.attname for f in fields])
    return _Rows(model, fields, [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows])


@dataclass(frozen=True)
class _Ref:
    """A model instance a build returned, kept by its model's label and primary key."""
    label: str
    pk: Any


def _keep_result(result: Any) -> Any:
    """``result`` with every model instance (alone or in a tuple) replaced by a :class:`_Ref`."""
    if isinstance(result, models.Model):
        return _Ref(result._meta.label, result.pk)
    if isinstance(result, tuple):
        return tuple(_keep_result(r) for r in result)
    return result


def _read_result(kept: Any) -> Any:
    """The inverse of :func:`_keep_result`, each instance read from the current database."""
    if isinstance(kept, _Ref):
        return apps.get_model(kept.label)._base_manager.get(pk=kept.pk)
    if isinstance(kept, tuple):
        return tuple(_read_result(k) for k in kept)
    return kept


def migration_tables() -> frozenset[type[models.Model]]:
    """The tables with rows in the test database as migrations left it. Read once per test process by
    the ``snapshot_base`` session fixture (tests/conftest.py)."""
    return frozenset(m for m in _tables() if m._base_manager.exists())


def share_between_processes(folder: Path) -> None:
    """Share the named states with the run's other test processes through ``folder`` (the
    ``snapshot_base`` fixture calls this in a pytest-xdist worker, with a folder of the whole run)."""
    folder.mkdir(exist_ok=True)
    _SHARED[:] = [folder]


def built_once(key: Any, build: Callable[[], Any], base: frozenset[type[models.Model]]) -> Any:
    """The state named ``key`` in the current test's database: built by ``build()`` the first time
    (and copied), laid from the copy every later time. Returns what ``build`` returned (a model
    instance is read again from the database, so a test that changes it changes only its own copy).

    ``base``: :func:`migration_tables`, never copied. The copy holds every row of the other tables,
    whatever step made it, so a state built on another (a closed contest on a generated one: ``build``
    calls ``built_once`` for the generated one) holds the rows its own steps changed too. Call it from
    a function-scoped fixture that depends on ``db`` (or ``transactional_db``) and no other state's
    fixture, before the test writes anything of its own. A state named by a string is built once in
    the whole parallel run (see the module's docstring)."""
    snapshot = _BUILT.get(key)
    if snapshot is None and _SHARED and isinstance(key, str):
        return _built_once_in_the_run(key, build, base)
    if snapshot is not None:
        with transaction.atomic():  # foreign keys are checked at its end: rows go in table by table
            return snapshot.restore()
    return _build(key, build, base)


def _build(key: Any, build: Callable[[], Any], base: frozenset[type[models.Model]]) -> Any:
    """Build the state for real in the current test's database and keep its rows under ``key``."""
    result = build()
    built_at = timezone.now()
    tables = [_copy_rows(m) for m in _tables() if m not in base and m._base_manager.exists()]
    _BUILT[key] = Snapshot(tables, _keep_result(result), built_at)
    return result


def _built_once_in_the_run(key: str, build: Callable[[], Any], base: frozenset[type[models.Model]]) -> Any:
    """:func:`built_once` for a state this process has not seen: read from the run's folder if another
    process built it, else built here and written there. A lock per state makes a process that needs
    it while another builds it wait for those rows rather than build them a second time."""
    path = _SHARED[0] / hashlib.sha256(key.encode()).hexdigest()[:16]
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if path.with_suffix(".pickle").exists():
            _BUILT[key] = pickle.loads(path.with_suffix(".pickle").read_bytes())  # noqa: S301 - this run wrote it
            with transaction.atomic():
                return _BUILT[key].restore()
        result = _build(key, build, base)
        written = path.with_suffix(".partial")
        written.write_bytes(pickle.dumps(_BUILT[key], protocol=pickle.HIGHEST_PROTOCOL))
        written.replace(path.with_suffix(".pickle"))  # whole or absent for a process that reads it
        return result
