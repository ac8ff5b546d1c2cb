"""Ingest as jobs in PostgreSQL: one job per file, queued in the library's
own database through procrastinate (a PostgreSQL task queue) and run by
``loupe worker`` processes on any machine that reaches the database, the
files and the library home (docs/scaling.md, "Job workers")."""
