"""Named SQL of bulk actions (tables of migration 0005).

Every statement re-checks, for each asset, that it belongs to the tenant and
that the viewer may read it (P1), although the ids come from the viewer's
own search: a bulk action never reaches past what its user can see.
"""

_READABLE = """
  a.tenant_id = %(tenant_id)s AND a.id = ANY (%(ids)s::bigint[])
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
"""

READABLE_IDS = "SELECT a.id FROM asset a WHERE" + _READABLE + "ORDER BY a.id"

# The "every term" match rule: of the given assets (a search's rows), those
# with a search document, in one of the searched languages, that holds every
# query term *of that language* (the query as that language's analyzer reads
# it: parallel arrays qlangs / qterms), among its own words or its
# vocabulary's labels (the two parts of the document the lexical lane
# reads). No terms: no asset.
ALL_TERMS = """
SELECT DISTINCT d.asset_id FROM search_document d
WHERE d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[])
  AND d.asset_id = ANY (%(ids)s::bigint[])
  AND EXISTS (SELECT 1 FROM unnest(%(qlangs)s::text[]) AS x(lang) WHERE x.lang = d.lang)
  AND (tsvector_to_array(d.tsv) || tsvector_to_array(d.vocab_tsv)) @> ARRAY(
        SELECT x.term FROM unnest(%(qlangs)s::text[], %(qterms)s::text[]) AS x(lang, term)
        WHERE x.lang = d.lang)
ORDER BY d.asset_id
"""

SET_RIGHTS_EXPIRY = ("UPDATE asset a SET rights_expire_at = %(until)s, updated_at = now() WHERE"
                     + _READABLE)
SET_EMBARGO = ("UPDATE asset a SET embargo_until = %(until)s, updated_at = now() WHERE"
               + _READABLE)
# a rating and a label set in Loupe (migration 0040); NULL clears
SET_RATING = ("UPDATE asset a SET rating_set = %(rating)s, updated_at = now() WHERE"
              + _READABLE)
SET_LABEL = ("UPDATE asset a SET label_set = %(label)s, updated_at = now() WHERE"
             + _READABLE)

ADD_KEYWORD = ("""
INSERT INTO asset_keyword (tenant_id, asset_id, keyword)
SELECT a.tenant_id, a.id, %(keyword)s FROM asset a WHERE""" + _READABLE + """
ON CONFLICT DO NOTHING
RETURNING asset_id
""")

# Keywords people added (asset_keyword), of that spelling in any case; the
# keywords written in the files are not in this table and stay.
REMOVE_KEYWORD = ("""
DELETE FROM asset_keyword k USING asset a
WHERE k.asset_id = a.id AND lower(k.keyword) = lower(%(keyword)s) AND""" + _READABLE + """
RETURNING k.asset_id
""")

# A hand-made collection by name (no source): found, or created.
HAND_MADE_COLLECTION = """
SELECT id FROM collection
WHERE tenant_id = %(tenant_id)s AND source_id IS NULL AND path = %(path)s
"""
CREATE_HAND_MADE_COLLECTION = """
INSERT INTO collection (tenant_id, source_id, parent_id, name, path)
VALUES (%(tenant_id)s, NULL, NULL, %(path)s, %(path)s)
RETURNING id
"""
ADD_TO_COLLECTION = ("""
INSERT INTO collection_member (tenant_id, collection_id, asset_id)
SELECT a.tenant_id, %(collection_id)s, a.id FROM asset a WHERE""" + _READABLE + """
ON CONFLICT DO NOTHING
RETURNING asset_id
""")

REMOVE_FROM_COLLECTION = ("""
DELETE FROM collection_member cm USING asset a
WHERE cm.collection_id = %(collection_id)s AND cm.asset_id = a.id AND""" + _READABLE + """
RETURNING cm.asset_id
""")

AUDIT = """
INSERT INTO audit_log (tenant_id, principal_id, actor, action, value, query, scope, lang,
                       verdict, total, total_exact, confirmed, count, asset_ids, match_rule)
VALUES (%(tenant_id)s, %(principal_id)s, %(actor)s, %(action)s, %(value)s, %(query)s,
        %(scope)s, %(lang)s, %(verdict)s, %(total)s, %(total_exact)s, %(confirmed)s,
        %(count)s, %(asset_ids)s, %(match)s)
RETURNING id
"""

AUDIT_LOG = """
SELECT id, at, actor, action, value, query, scope, lang, verdict, total, total_exact,
       confirmed, count, match_rule,  -- match_rule: 'all' / 'any' (migration 0014)
       target                         -- target: the user of a user action (migration 0009)
FROM audit_log WHERE tenant_id = %(tenant_id)s
ORDER BY id DESC LIMIT %(limit)s
"""
