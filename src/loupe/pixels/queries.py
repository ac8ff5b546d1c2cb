"""Named SQL of the machine words (tables of migration 0019)."""

# One asset's facts (an asset deleted meanwhile is skipped). OCR columns are
# kept when the new facts carry no OCR run (ocr_text NULL): a re-analysis of
# the pixels without OCR does not forget text read before for the same bytes.
UPSERT_MACHINE = """
INSERT INTO asset_machine AS m (asset_id, tenant_id, kind, orientation, size_class, background,
    cutout, colours, colour_shares, background_colour, monochrome, closeup, ocr_text, ocr_lang,
    ocr_ms, cues, error, version, computed_at)
SELECT a.id, a.tenant_id, %(kind)s, %(orientation)s, %(size_class)s, %(background)s,
       %(cutout)s, %(colours)s, %(colour_shares)s, %(background_colour)s, %(monochrome)s,
       %(closeup)s, %(ocr_text)s, %(ocr_lang)s, %(ocr_ms)s, %(cues)s, %(error)s, %(version)s, now()
FROM asset a WHERE a.id = %(asset_id)s AND a.tenant_id = %(tenant_id)s
ON CONFLICT (asset_id) DO UPDATE SET
    kind = EXCLUDED.kind, orientation = EXCLUDED.orientation, size_class = EXCLUDED.size_class,
    background = EXCLUDED.background, cutout = EXCLUDED.cutout, colours = EXCLUDED.colours,
    colour_shares = EXCLUDED.colour_shares, background_colour = EXCLUDED.background_colour,
    monochrome = EXCLUDED.monochrome, closeup = EXCLUDED.closeup,
    ocr_text = CASE WHEN %(keep_ocr)s THEN m.ocr_text ELSE EXCLUDED.ocr_text END,
    ocr_lang = CASE WHEN %(keep_ocr)s THEN m.ocr_lang ELSE EXCLUDED.ocr_lang END,
    ocr_ms = CASE WHEN %(keep_ocr)s THEN m.ocr_ms ELSE EXCLUDED.ocr_ms END,
    cues = EXCLUDED.cues, error = EXCLUDED.error, version = EXCLUDED.version,
    computed_at = now()
"""

# An asset's facts, for its documents and for show.
ASSET_MACHINE = """
SELECT kind, orientation, size_class, background, cutout, colours, colour_shares,
       background_colour, monochrome, closeup, ocr_text, ocr_lang, ocr_ms, cues, error, version,
       computed_at
FROM asset_machine WHERE asset_id = %(asset_id)s
"""
MACHINE_COLUMNS = ("kind", "orientation", "size_class", "background", "cutout", "colours",
                   "colour_shares", "background_colour", "monochrome", "closeup", "ocr_text",
                   "ocr_lang", "ocr_ms", "cues", "error", "version", "computed_at")

# Store OCR text only (loupe enrich --ocr on assets whose pixels are done).
SET_OCR = """
UPDATE asset_machine SET ocr_text = %(ocr_text)s, ocr_lang = %(ocr_lang)s, ocr_ms = %(ocr_ms)s
WHERE asset_id = %(asset_id)s
"""

# Assets whose machine facts are missing or of an older version (or, with
# ocr, never OCR-read), after a cursor, in id order: `loupe enrich` resumes.
MISSING = """
SELECT a.id
FROM asset a LEFT JOIN asset_machine m ON m.asset_id = a.id
WHERE a.tenant_id = %(tenant_id)s AND a.id > %(after)s
  AND (m.asset_id IS NULL OR m.version < %(version)s
       OR (%(ocr)s AND m.ocr_text IS NULL AND m.error IS NULL))
ORDER BY a.id
LIMIT %(batch)s
"""
COUNT_MISSING = """
SELECT count(*)
FROM asset a LEFT JOIN asset_machine m ON m.asset_id = a.id
WHERE a.tenant_id = %(tenant_id)s
  AND (m.asset_id IS NULL OR m.version < %(version)s
       OR (%(ocr)s AND m.ocr_text IS NULL AND m.error IS NULL))
"""

# An asset's facts of an older rule version, removed when none of its files
# holds its bytes any more (loupe.pixels.enrich.enrich).
DROP_STALE_FACTS = """
DELETE FROM asset_machine WHERE asset_id = %(asset_id)s AND version < %(version)s
"""

# ... and with them its vectors, of every lane: the text lanes embedded the
# words those facts gave its documents, the image lanes pixels read before
# the bytes were checked (a member still found the
# asset by the leaked scan's text through its text vector). `loupe embed`
# computes them again once a file holds the asset's bytes.
DROP_ASSET_VECTORS = """
DELETE FROM asset_vector WHERE asset_id = %(asset_id)s
"""

# ... and its faces (crops included), its face scans (so that `loupe faces`
# scans it again once a file holds its bytes) and its perceptual hash (the
# back-fill computes it again): read by path, they may show
# another picture.
DROP_ASSET_FACES = """
DELETE FROM face WHERE asset_id = %(asset_id)s
"""
DROP_ASSET_FACE_SCANS = """
DELETE FROM face_scan WHERE asset_id = %(asset_id)s
"""
DROP_ASSET_HASH = """
DELETE FROM asset_phash WHERE asset_id = %(asset_id)s
"""

# The machine words of an asset's documents, per language, to tell whether a
# recomputation changed them.
MACHINE_WORDS_OF = """
SELECT lang, machine FROM search_document WHERE asset_id = %(asset_id)s ORDER BY lang
"""

# An asset's text-lane vectors, which embed its document's words (machine
# words included): removed when enrich changed those words, so that search
# never meets a vector of words the asset no longer has.
DROP_TEXT_VECTORS = """
DELETE FROM asset_vector WHERE asset_id = %(asset_id)s AND lane = 'text'
"""

MACHINE_SETTINGS = """
SELECT coalesce(s.ocr, false), coalesce(s.ocr_budget_ms, 3000), coalesce(s.ocr_min_score, 0.7)
FROM (SELECT %(tenant_id)s::bigint AS tenant_id) t
LEFT JOIN machine_setting s ON s.tenant_id = t.tenant_id
"""
SET_MACHINE_SETTINGS = """
INSERT INTO machine_setting (tenant_id, ocr, ocr_budget_ms, ocr_min_score)
VALUES (%(tenant_id)s, %(ocr)s, %(ocr_budget_ms)s, %(ocr_min_score)s)
ON CONFLICT (tenant_id) DO UPDATE SET ocr = EXCLUDED.ocr, ocr_budget_ms = EXCLUDED.ocr_budget_ms,
    ocr_min_score = EXCLUDED.ocr_min_score
"""
