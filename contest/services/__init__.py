"""Business operations of the platform (HackSoft style: services write, selectors read).

Modules: ``storage`` (files in the database), ``audit`` (append-only log),
``jobs`` (job rows and dispatch to Celery, retry), ``setup`` (contests from
YAML, adding rounds), ``teams`` (adding, approving and joining teams),
``generation`` (a round's data), ``uploads`` (anonymized sets and attacks:
rules, validation, scoring), ``judge`` (phase close, pseudonymization, judge
attacks, closing a phase early), ``results`` (minimums, totals, awards,
publication), ``transfer`` (export/import of a whole contest), ``demo`` (the
demo contest of ``manage.py demo``, round 1 played through).
"""
