-- 0040: a rating and a colour label set in Loupe (bulk set_rating /
-- set_label, audited like every bulk action) on the asset itself.
--
-- A file's own XMP Rating and Label stay in its metadata (0038); the value
-- set in Loupe replaces them for every viewer who reads the whole asset
-- (its document: doc_readers, as for keywords people added, asset_keyword),
-- since it was set on the asset, not on a file; a member who reads only some
-- of its files sees the ratings and labels of those files. NULL: none set.
ALTER TABLE asset
    ADD COLUMN rating_set smallint CHECK (rating_set BETWEEN -1 AND 5),
    ADD COLUMN label_set text CHECK (length(label_set) BETWEEN 1 AND 200);

CREATE INDEX asset_rating_set_idx ON asset (tenant_id, rating_set) WHERE rating_set IS NOT NULL;
CREATE INDEX asset_label_set_idx ON asset (tenant_id, lower(label_set)) WHERE label_set IS NOT NULL;
