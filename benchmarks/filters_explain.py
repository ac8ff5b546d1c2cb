"""EXPLAIN (ANALYZE, BUFFERS) of one filtered search statement (owner) on the
library benchmarks/filters.py kept with ``--home``: where the time
of a filtered search goes. Run with PYTHONPATH pointing at the code to explain.

Usage:
    PYTHONPATH=src .venv/bin/python benchmarks/filters_explain.py HOME FILTER QUERY KIND
    (FILTER: creator | year+orientation | country; KIND: scoped | scoped_fused)
"""
import sys, time
from pathlib import Path
import numpy as np
from loupe import Library
from loupe.access import OWNER
from loupe.filters import search as fs
from loupe.fusion.search import VectorLane
from loupe.lexical.search import QueryTerms
from loupe.search import statements as st

home = Path(sys.argv[1]); fname = sys.argv[2]; text = sys.argv[3]; kind = sys.argv[4]
FILTERS = {
    "creator": {"creator": "Creator 7"},
    "year+orientation": {"all": [{"captured": {"from": "2008-01-01", "to": "2009-01-01"}},
                                 {"orientation": "portrait"}]},
    "country": {"country": "country4"},
}
lib = Library.open(home, database_url=None, create=False)
model_id = int((home / "bench-filters-built").read_text().split()[0])
filt = fs.prepare(lib.conn, lib.tenant_id, FILTERS[fname], viewer=OWNER)
v = np.random.default_rng(5).standard_normal(512).astype(np.float32); v /= np.linalg.norm(v)
lanes = [VectorLane("image", "image", model_id, "bench", 512, 2.0, v)] if kind == "scoped_fused" else []
terms = lib.analyze(text, query=True)
p = st.parameters(tenant_id=lib.tenant_id, terms=QueryTerms.single("en", terms).params(), query=text,
                  raw_cap=3000, keep_cap=1000, limit=20, offset=0, viewer=OWNER, lanes=lanes, clause=filt)
stmt = st.compose(kind, lanes, False, filt)
if not isinstance(stmt, str):
    stmt = stmt.as_string(lib.conn)
for line in lib.conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + stmt, p).fetchall():
    print(line[0])
