"""A new, empty database on a PostgreSQL server for one run, dropped afterwards.

Shared by the tests' ``postgres_url`` fixture and ``bench/chaos.py``: ``scratch_database(url,
prefix)`` creates ``<prefix>_<12 hex digits>`` on the server that ``url`` names, yields that
database's URL (password kept), and drops it when the block ends, even when the code under test
left connections open (``WITH (FORCE)``, PostgreSQL 13 or later).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


@contextmanager
def scratch_database(server_url: str, prefix: str) -> Iterator[str]:
    url = make_url(server_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
