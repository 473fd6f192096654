"""The platform's seed schemes, both here: every random draw is reproducible from its labels.

Two schemes, for a reason. The judge's draws (attacks, previews, bootstrap, baselines) use
:func:`derived_seed`, SHA-256 of text labels. The generated data (a round's sets, the city model's
simulations) uses :func:`sequence_seed`, numpy's ``SeedSequence`` of integers, the scheme
``synth`` uses for its own streams (``default_rng([seed, team, data_no])``): every generated set's
bytes depend on it, so moving it to :func:`derived_seed` would change the data of every existing
contest (the generation and golden tests pin those bytes).
"""
from __future__ import annotations

import hashlib

import numpy as np


def derived_seed(base_seed: int, *parts) -> int:
    """A 63-bit seed derived from ``base_seed`` and labels, e.g. ``(contest seed, round, set, algorithm)``.

    SHA-256 of the ``:``-joined text, so seeds of different labels are unrelated and a re-run
    with the same labels reproduces the same draw on any machine.
    """
    text = ":".join(str(p) for p in (base_seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def sequence_seed(*entropy: int) -> int:
    """A 32-bit seed of generated data from integers, e.g. ``(contest seed, round number)``.

    The first word of numpy's ``SeedSequence(entropy)``; see the module docstring for why the
    generated data keeps this scheme.
    """
    return int(np.random.SeedSequence([int(e) for e in entropy]).generate_state(1)[0])
