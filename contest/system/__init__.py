"""Seeing the system: worker heartbeats, the System console page's figures, health and readiness
endpoints and Prometheus metrics (docs/reliability.md "Seeing the system").

An app of its own (label ``system``), so its one table and its migrations stand apart from the contest's.
"""
