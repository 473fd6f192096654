"""The one way the platform derives seeds: every random draw of the judge is reproducible from a label."""
from __future__ import annotations

import hashlib


def derived_seed(base_seed: int, *parts) -> int:
    """A 63-bit seed derived from ``base_seed`` and labels, e.g. ``(contest seed, round, set, algorithm)``.

    SHA-256 of the ``:``-joined text, so seeds of different labels are unrelated and a re-run
    with the same labels reproduces the same draw on any machine.
    """
    text = ":".join(str(p) for p in (base_seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1
