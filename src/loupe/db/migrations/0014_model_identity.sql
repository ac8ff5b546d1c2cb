-- 0014: a model's identity is its content (issue 12, SPEC V3), and a bulk
-- action records its match rule (C6).
--
-- content_sha256: the fingerprint (loupe.models.registry.fingerprint: sha256
-- of the model folder's files and of its kind, width and prefixes) of the
-- model whose vectors are stored under this row. When the folder under the
-- same name holds another model, the fingerprints differ: the lane stops
-- comparing query vectors with the stored ones, and 'loupe embed' removes
-- them and computes new ones. NULL: vectors written before this migration,
-- by a model Loupe cannot name any more; the next 'loupe embed' or
-- 'loupe models use' records the fingerprint of the folder as it is then.
ALTER TABLE embedding_model ADD COLUMN IF NOT EXISTS content_sha256 text;

-- match_rule: 'all' (assets holding every query term) or 'any' (every asset
-- the search ranked); NULL for actions logged before the rule existed
-- (they acted on every ranked asset).
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS match_rule text
    CHECK (match_rule IN ('all', 'any'));
