"""SQL of faces and people (migration 0022). Every statement is bound to one
tenant; those that show something to a viewer take ``see_all`` and
``principals`` and test ``loupe_can_read`` on each asset (P1), so a person's
counts, faces and pictures are only of assets the viewer may read."""

# Assets of the tenant not yet scanned by this detector version, after
# ``after`` (resumable: a scan row is written per asset), with their primary
# file's path and stored pixel size.
PENDING = """
SELECT a.id, f.path, a.width, a.height
FROM asset a
CROSS JOIN LATERAL (SELECT path FROM asset_file WHERE asset_id = a.id
                    ORDER BY rel_path, path LIMIT 1) f
WHERE a.tenant_id = %(tenant_id)s AND a.id > %(after)s
  AND NOT EXISTS (SELECT 1 FROM face_scan s
                  WHERE s.asset_id = a.id AND s.detector = %(detector)s)
ORDER BY a.id
LIMIT %(batch)s
"""

PENDING_COUNT = """
SELECT count(*) FROM asset a
WHERE a.tenant_id = %(tenant_id)s
  AND NOT EXISTS (SELECT 1 FROM face_scan s
                  WHERE s.asset_id = a.id AND s.detector = %(detector)s)
"""

# Named regions people wrote in the asset's files (metadata "regions").
ASSET_REGIONS = """
SELECT coalesce(jsonb_agg(r), '[]'::jsonb)
FROM asset_file f, jsonb_array_elements(coalesce(f.metadata -> 'regions', '[]'::jsonb)) r
WHERE f.asset_id = %(asset_id)s
"""

# The faces an asset had before this scan (another detector version, or its
# bytes changed): a rescan hands their person to the new faces at the same
# place, then deletes them.
OLD_FACES = """
SELECT box_x, box_y, box_w, box_h, person_id, confirmed, from_file FROM face
WHERE asset_id = %(asset_id)s AND person_id IS NOT NULL
"""
DELETE_OLD_FACES = "DELETE FROM face WHERE asset_id = %(asset_id)s"

INSERT_FACE = """
INSERT INTO face (tenant_id, asset_id, box_x, box_y, box_w, box_h, descriptor, detector,
                  size_px, blur, score, crop, region_name, person_id, confirmed, from_file)
VALUES (%(tenant_id)s, %(asset_id)s, %(x)s, %(y)s, %(w)s, %(h)s, %(descriptor)s::vector,
        %(detector)s, %(size_px)s, %(blur)s, %(score)s, %(crop)s, %(region_name)s,
        %(person_id)s, %(confirmed)s, %(from_file)s)
"""

STORE_SCAN = """
INSERT INTO face_scan (asset_id, tenant_id, detector, faces, skipped)
VALUES (%(asset_id)s, %(tenant_id)s, %(detector)s, %(faces)s, %(skipped)s)
ON CONFLICT (asset_id, detector) DO UPDATE
SET faces = EXCLUDED.faces, skipped = EXCLUDED.skipped, scanned_at = now()
"""

# Faces waiting for a cluster, oldest first.
UNCLUSTERED = """
SELECT id, descriptor::text, region_name FROM face
WHERE tenant_id = %(tenant_id)s AND person_id IS NULL
ORDER BY region_name IS NULL, id
"""

# The visible (not hidden) person a name written in a file names.
PERSON_BY_NAME = """
SELECT id FROM person
WHERE tenant_id = %(tenant_id)s AND lower(name) = lower(%(name)s) AND NOT hidden
ORDER BY id LIMIT 1
"""

# The nearest clustered faces (Euclidean distance, dlib's metric) whose
# person this face was not said to be "not". On a large tenant the planner
# walks the HNSW index (approximate; the session's iterative scan goes on
# past unclustered faces until LIMIT rows, up to hnsw.max_scan_tuples).
# A face placed in its person by a name written in its file (from_file) draws
# the new face into that person only when everyone who may read its asset
# may read the new face's asset (readers <@ readers; the owner's and admins'
# private files have no readers, so their names still gather their faces):
# a name written by whoever can read a file never labels faces they cannot
# read (a member's upload labelled hidden pictures).
NEAREST_CLUSTERED = """
SELECT f.person_id, f.descriptor <-> %(descriptor)s::vector AS distance
FROM face f
WHERE f.tenant_id = %(tenant_id)s AND f.person_id IS NOT NULL AND f.id <> %(face_id)s
  AND NOT EXISTS (SELECT 1 FROM face_rejection r
                  WHERE r.face_id = %(face_id)s AND r.person_id = f.person_id)
  AND (NOT f.from_file
       OR (SELECT a.readers FROM asset a WHERE a.id = f.asset_id)
          <@ (SELECT a.readers FROM face g JOIN asset a ON a.id = g.asset_id
              WHERE g.id = %(face_id)s))
ORDER BY f.descriptor <-> %(descriptor)s::vector
LIMIT %(k)s
"""

NEW_PERSON = """
INSERT INTO person (tenant_id, number, name, named_by, named_at)
SELECT %(tenant_id)s, coalesce(max(number), 0) + 1, %(name)s, %(named_by)s,
       CASE WHEN %(name)s::text IS NULL THEN NULL ELSE now() END
FROM person WHERE tenant_id = %(tenant_id)s
RETURNING id
"""

ASSIGN_FACE = """
UPDATE face SET person_id = %(person_id)s, confirmed = %(confirmed)s, from_file = %(confirmed)s
WHERE id = %(face_id)s
"""

# People with the number of assets and faces the viewer may read; a person
# with none readable is not listed (a member never learns that hidden
# pictures of someone exist). ``cover``: the viewer's readable face of the
# person with the largest size.
PEOPLE = """
SELECT p.id, p.number,
       -- a member sees the name only through a confirmed face it may read
       -- (a member's own unconfirmed face showed the name a
       -- person gave in hidden pictures)
       CASE WHEN %(see_all)s OR bool_or(f.confirmed) THEN p.name END AS name, p.hidden,
       count(DISTINCT f.asset_id) AS assets, count(*) AS faces,
       count(*) FILTER (WHERE NOT f.confirmed) AS unconfirmed,
       (array_agg(f.id ORDER BY f.size_px DESC, f.id))[1] AS cover
FROM person p
JOIN face f ON f.person_id = p.id
JOIN asset a ON a.id = f.asset_id
WHERE p.tenant_id = %(tenant_id)s
  AND (%(hidden)s OR NOT p.hidden)
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
GROUP BY p.id
ORDER BY (CASE WHEN %(see_all)s OR bool_or(f.confirmed) THEN p.name END) IS NULL,
         count(DISTINCT f.asset_id) DESC, p.number
LIMIT %(limit)s
"""

# One person's faces the viewer may read (same test as PEOPLE).
PERSON_FACES = """
SELECT f.id, f.asset_id, f.box_x, f.box_y, f.box_w, f.box_h, f.size_px, f.blur,
       f.confirmed, f.region_name, f.score
FROM face f JOIN asset a ON a.id = f.asset_id
WHERE f.person_id = %(person_id)s AND f.tenant_id = %(tenant_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
ORDER BY f.asset_id, f.id
"""

PERSON = """
SELECT id, number, name, hidden, named_by, named_at FROM person
WHERE id = %(person_id)s AND tenant_id = %(tenant_id)s
"""

# The faces of one asset the viewer may read (the asset test).
ASSET_FACES = """
SELECT f.id, f.person_id, p.number,
       -- the name only through a confirmed face the viewer may read (as PEOPLE)
       CASE WHEN %(see_all)s OR EXISTS (
                SELECT 1 FROM face c JOIN asset ca ON ca.id = c.asset_id
                WHERE c.person_id = p.id AND c.confirmed
                  AND loupe_can_read(ca.readers, ca.embargo_until, ca.rights_expire_at,
                                     %(see_all)s, %(principals)s::bigint[]))
            THEN p.name END AS name,
       f.confirmed, f.box_x, f.box_y, f.box_w, f.box_h
FROM face f JOIN asset a ON a.id = f.asset_id LEFT JOIN person p ON p.id = f.person_id
WHERE f.asset_id = %(asset_id)s AND f.tenant_id = %(tenant_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
ORDER BY f.id
"""

# A face's crop, only if the viewer may read its asset.
FACE_CROP = """
SELECT f.crop FROM face f JOIN asset a ON a.id = f.asset_id
WHERE f.id = %(face_id)s AND f.tenant_id = %(tenant_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
"""

# Assets holding a face of the person (all: for recompiling documents).
PERSON_ASSETS = """
SELECT DISTINCT asset_id FROM face WHERE person_id = %(person_id)s ORDER BY asset_id
"""

SET_NAME = """
UPDATE person SET name = %(name)s, named_by = %(named_by)s,
       named_at = CASE WHEN %(name)s::text IS NULL THEN NULL ELSE now() END
WHERE id = %(person_id)s
"""

# Naming a person confirms every face it holds; unnaming unconfirms them.
CONFIRM_FACES = """
UPDATE face SET confirmed = %(confirmed)s, from_file = false WHERE person_id = %(person_id)s
"""

# Re-naming a person that has a name: the faces already confirmed take the
# new name; the machine's guesses (faces clustered in since, a member's
# upload among them) stay guesses.
RECONFIRM_FACES = """
UPDATE face SET from_file = false WHERE person_id = %(person_id)s AND confirmed
"""

SET_HIDDEN = "UPDATE person SET hidden = %(hidden)s WHERE id = %(person_id)s"

# Merge: src's rejections become dst's, its faces move, src goes.
MOVE_REJECTIONS = """
INSERT INTO face_rejection (face_id, person_id, rejected_by, rejected_at)
SELECT face_id, %(dst)s, rejected_by, rejected_at FROM face_rejection WHERE person_id = %(src)s
ON CONFLICT DO NOTHING
"""
MOVE_FACES = """
UPDATE face SET person_id = %(dst)s, confirmed = %(confirmed)s, from_file = false
WHERE person_id = %(src)s
"""
DELETE_PERSON = "DELETE FROM person WHERE id = %(person_id)s"

# Split: the given faces of a person (ids checked to be its) move to another.
MOVE_SOME_FACES = """
UPDATE face SET person_id = %(dst)s, confirmed = false, from_file = false
WHERE person_id = %(src)s AND id = ANY(%(face_ids)s::bigint[])
RETURNING id, asset_id
"""

FACE = "SELECT id, person_id, asset_id FROM face WHERE id = %(face_id)s AND tenant_id = %(tenant_id)s"

REJECT = """
INSERT INTO face_rejection (face_id, person_id, rejected_by) VALUES (%(face_id)s, %(person_id)s,
                                                                     %(by)s)
ON CONFLICT DO NOTHING
"""
UNASSIGN_FACE = """
UPDATE face SET person_id = NULL, confirmed = false, from_file = false WHERE id = %(face_id)s
"""

# People left with no face (after merges, splits, rejections) go.
DROP_EMPTY_PEOPLE = """
DELETE FROM person p WHERE p.tenant_id = %(tenant_id)s
  AND NOT EXISTS (SELECT 1 FROM face f WHERE f.person_id = p.id)
"""

STATS = """
SELECT (SELECT count(*) FROM face_scan WHERE tenant_id = %(tenant_id)s
                                         AND detector = %(detector)s) AS scanned,
       (SELECT count(*) FROM face_scan WHERE tenant_id = %(tenant_id)s AND detector = %(detector)s
                                         AND skipped IS NOT NULL) AS skipped,
       (SELECT count(*) FROM face WHERE tenant_id = %(tenant_id)s) AS faces,
       (SELECT count(*) FROM person WHERE tenant_id = %(tenant_id)s) AS people
"""
