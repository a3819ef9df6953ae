"""The store of runs: SQLAlchemy 2.0 models, Alembic migrations, ingest."""
