"""Names every module of the instrument shares: the systems a run can use,
the leak check's margin, the pool depth, :class:`EvalError` and the
read-only connection runs are read through. Imports only SQL modules
(:mod:`.queries`, :mod:`loupe.vector.queries`); :mod:`.instrument` re-exports
these names."""

import psycopg
from psycopg.conninfo import make_conninfo

from ..vector import queries as vq
from . import queries as q

#: Systems a run can use: the production hybrid search, its lexical lane
#: alone, its text lane alone, the index variants of an image-text model
#: (V7, E4), and the reference peer (BM25 + dense
#: RRF, :mod:`loupe.eval.peer`).
SYSTEMS = ("hybrid", "lexical", "text", "image", "caption", "both", "peer")
VARIANTS = ("image", "caption", "both")
#: Default margin of the leak check (E5): recall@10 points by which
#: caption-derived queries may beat blind ones on the image variant.
LEAK_MARGIN = 0.05
#: Pool depth (E7: the top 10 of every system).
POOL_DEPTH = 10


class EvalError(ValueError):
    """Bad input to the instrument (unknown set, run, pool, system, model)."""


def readonly_connection(conn: psycopg.Connection) -> psycopg.Connection:
    """A new connection to the database behind ``conn`` that can only read:
    role ``loupe_eval_reader`` (SELECT only, migration 0006) and
    ``default_transaction_read_only``. Any write through it raises
    ``psycopg.errors.ReadOnlySqlTransaction`` or ``InsufficientPrivilege``.
    This guards against the instrument's own code writing (settings, index
    builds); it is not a sandbox for hostile code in the same process, which
    could ``RESET ROLE``.

    Raises:
        EvalError: the role is missing or this database user may not use it.
    """
    from pgvector.psycopg import register_vector

    info = conn.info
    url = make_conninfo(info.dsn, password=info.password) if info.password else info.dsn
    reader = psycopg.connect(url, autocommit=True)
    try:
        try:
            for stmt in q.READ_ONLY_SESSION:
                reader.execute(stmt)
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.InvalidParameterValue,
                psycopg.errors.UndefinedObject) as exc:
            raise EvalError(
                f"the evaluation instrument runs only as the read-only role {q.READER_ROLE}, "
                f"which this database user cannot use ({exc}); ask the administrator for: "
                f"CREATE ROLE {q.READER_ROLE} NOLOGIN; GRANT {q.READER_ROLE} TO {info.user}; "
                f"GRANT USAGE ON SCHEMA public TO {q.READER_ROLE}; GRANT SELECT ON ALL "
                f"TABLES IN SCHEMA public TO {q.READER_ROLE}") from exc
        register_vector(reader)
        for stmt in vq.hnsw_session():
            reader.execute(stmt)
    except BaseException:
        reader.close()
        raise
    return reader
