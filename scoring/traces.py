"""In-memory trace containers shared by every part of the judge (DESIGN "Data in memory").

Region values are 0-based indices into a :class:`~scoring.grid.Grid`; user ids,
pseudonyms and time ids keep their 1-based file values.

Plain traces (reference, original, etraces) are a dense ``(m, L)`` array.
Obfuscated traces (anotraces, pubtraces) give each event an id into an
interned :class:`SetTable`, because 2019 submissions repeat the same
generalized blocks millions of times: scores and attacks work per distinct
(set) or per distinct (original region, set) pair and gather back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class _UsersByTimes:
    """What plain and obfuscated traces share: ``user_ids`` (m,) by ``time_ids`` (L,), one event per cell."""

    user_ids: np.ndarray
    time_ids: np.ndarray

    def _check_shape(self, name: str, matrix: np.ndarray) -> None:
        """``matrix`` (the events' array, called ``name``) must be (m, L)."""
        if matrix.shape != (len(self.user_ids), len(self.time_ids)):
            raise ValueError(f"{name} shape {matrix.shape} does not match "
                             f"{len(self.user_ids)} users x {len(self.time_ids)} time ids")

    @property
    def m(self) -> int:
        return len(self.user_ids)

    @property
    def L(self) -> int:
        return len(self.time_ids)


@dataclass(frozen=True)
class Traces(_UsersByTimes):
    """Plain traces: exactly one region per user per time id.

    Attributes:
        user_ids: (m,) int64, ascending 1-based user ids (pseudonyms for pubtraces).
        time_ids: (L,) int64, ascending 1-based time ids.
        regions: (m, L) int32, 0-based region index of user ``i`` at ``time_ids[j]``.
    """

    user_ids: np.ndarray
    time_ids: np.ndarray
    regions: np.ndarray

    def __post_init__(self):
        self._check_shape("regions", self.regions)

    def select_times(self, mask) -> Traces:
        """The same users restricted to the time ids where ``mask`` (L,) is True."""
        mask = np.asarray(mask, dtype=bool)
        return Traces(self.user_ids, self.time_ids[mask], self.regions[:, mask])


@dataclass(frozen=True)
class SetTable:
    """Interned region sets, CSR over set ids.

    Set ids ``0..M-1`` are the singletons ``{s}`` (so a plain region index is
    also its own set id), ``M`` is the empty set (a deletion ``*``), and ids
    ``> M`` are generalized sets of two or more distinct regions, each stored
    once, members sorted ascending.

    Attributes:
        M: number of regions of the grid.
        indptr: (n_sets + 1,) int64 offsets into ``members``.
        members: (indptr[-1],) int32 0-based region indices.
    """

    M: int
    indptr: np.ndarray
    members: np.ndarray

    @property
    def DELETION(self) -> int:  # noqa: N802 - a constant of the table
        return self.M

    @property
    def n_sets(self) -> int:
        return len(self.indptr) - 1

    @property
    def sizes(self) -> np.ndarray:
        """(n_sets,) int64 number of regions in each set (0 for the deletion)."""
        return np.diff(self.indptr)

    def set_members(self, set_id: int) -> np.ndarray:
        return self.members[self.indptr[set_id]:self.indptr[set_id + 1]]

    @classmethod
    def singletons(cls, M: int) -> SetTable:
        """The table holding only the M singletons and the deletion."""
        indptr = np.concatenate([np.arange(M + 1, dtype=np.int64), [M]])
        return cls(M, indptr, np.arange(M, dtype=np.int32))

    @classmethod
    def from_members(cls, M: int, sizes, members) -> SetTable:
        """Singletons, the deletion, then generalized sets given back to back.

        Args:
            sizes: (g,) number of regions of each generalized set (>= 2 each).
            members: (sum sizes,) int 0-based regions, set after set, each set
                sorted ascending.
        """
        base = cls.singletons(M)
        sizes = np.asarray(sizes, dtype=np.int64)
        if len(sizes) == 0:
            return base
        indptr = np.concatenate([base.indptr, M + np.cumsum(sizes)])
        return cls(M, indptr, np.concatenate([base.members, np.asarray(members, dtype=np.int32)]))

    @classmethod
    def from_sets(cls, M: int, generalized: list) -> SetTable:
        """Singletons, the deletion, then each of ``generalized`` (iterables of >= 2 distinct regions)."""
        arrays = [np.sort(np.asarray(list(g), dtype=np.int32)) for g in generalized]
        sizes = np.array([len(a) for a in arrays], dtype=np.int64)
        return cls.from_members(M, sizes, np.concatenate(arrays) if arrays else np.zeros(0, np.int32))


@dataclass(frozen=True)
class AnonymizedTraces(_UsersByTimes):
    """Obfuscated traces: one interned region set per event.

    Attributes:
        user_ids: (m,) int64 user ids (pseudonyms m+1..2m for pubtraces).
        time_ids: (L,) int64 time ids.
        events: (m, L) int32 set id of each event into ``sets``.
        sets: the interned :class:`SetTable`.
    """

    user_ids: np.ndarray
    time_ids: np.ndarray
    events: np.ndarray
    sets: SetTable

    def __post_init__(self):
        self._check_shape("events", self.events)

    @classmethod
    def from_traces(cls, traces: Traces, M: int) -> AnonymizedTraces:
        """Plain traces seen as unobfuscated anonymized traces (A1-none)."""
        return cls(traces.user_ids, traces.time_ids, traces.regions.astype(np.int32, copy=False),
                   SetTable.singletons(M))
