"""SQL persistence: SQLite by default, PostgreSQL by URL."""

from tuner.storage.store import DEFAULT_DATABASE_URL, Store, default_url

__all__ = ["DEFAULT_DATABASE_URL", "Store", "default_url"]
