"""Business operations of the platform (HackSoft style: services write, selectors read).

Modules: ``storage`` (files in the database), ``audit`` (append-only log),
``jobs`` (job rows and dispatch to Celery), ``setup`` (contests from YAML),
``generation`` (a round's data), ``uploads`` (anonymized sets and attacks:
rules, validation, scoring), ``judge`` (phase close, pseudonymization, judge
attacks), ``results`` (minimums, totals, awards, publication),
``transfer`` (export/import of a whole contest).
"""
