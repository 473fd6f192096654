"""TraceCup's judge: contest files, scores, pseudonymization, sample algorithms, results.

Pure numpy/scipy (no Django), so a team installs exactly the code the platform
runs (``pip install .`` from a checkout) and uses it from a shell:
``python -m scoring validate|utility|reid|trace|attack|preview ...``.
"""

#: The judge's version, shown on the team page beside the ``pip install`` command.
__version__ = "0.2.0"
