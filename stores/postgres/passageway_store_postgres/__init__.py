"""passageway-store-postgres: the ``postgres`` store plugin (PostgreSQL with pgvector)."""
