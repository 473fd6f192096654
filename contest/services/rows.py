"""Writing one column of many rows, each row its own value, in one statement.

A batch of attack scoring ends each of its attacks with its own score and each job with its own message.
Django's ``bulk_update`` writes that as ``SET col = CASE WHEN id = 1 THEN ... WHEN id = 2 THEN ... END``,
and building those expressions (a ``When`` and a ``Value`` per row, each resolved and compiled) cost more
of the worker's time than scoring a small attack: about a third of a 16-attack chunk's store at 40 teams
(``make bench-full``'s growth table, sampled with py-spy). :func:`update_each` joins the rows to their
values instead, as a derived table, in SQL that PostgreSQL and SQLite (3.33 or newer) both run.
"""
from __future__ import annotations

from django.db import connection, models


def update_each(model: type[models.Model], field: str, values: dict) -> int:
    """Set ``field`` of each row of ``model`` whose primary key is a key of ``values`` to its value, in one
    UPDATE; returns the number of rows updated. The values go as parameters, cast to the column's type."""
    if not values:
        return 0
    quote = connection.ops.quote_name
    column, pk = model._meta.get_field(field), model._meta.pk
    key_type, value_type = pk.db_type(connection), column.db_type(connection)
    first = f"SELECT CAST(%s AS {key_type}) AS pk, CAST(%s AS {value_type}) AS value"
    rows = " UNION ALL ".join([first] + [f"SELECT CAST(%s AS {key_type}), CAST(%s AS {value_type})"] * (len(values) - 1))
    table = quote(model._meta.db_table)
    sql = (f"UPDATE {table} SET {quote(column.column)} = v.value FROM ({rows}) AS v "  # noqa: S608 - names from the model; values are parameters
           f"WHERE {table}.{quote(pk.column)} = v.pk")
    params = [p for key, value in values.items()
              for p in (key, column.get_db_prep_save(value, connection))]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
