-- 0004: scoped search (issue 5; SPEC C1–C3, N4). A scope's members are the
-- files of a collection and its sub-collections: find them by collection
-- without reading the whole file table.
CREATE INDEX asset_file_collection_idx ON asset_file (collection_id, asset_id);
CREATE INDEX collection_parent_idx ON collection (parent_id);
