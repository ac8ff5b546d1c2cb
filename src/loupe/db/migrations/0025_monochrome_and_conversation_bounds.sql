-- 0025 (issue 17 part 2, second pass): the monochrome filter and bounded conversations.
--
-- {"monochrome": true} (black and white / greyscale, docs/filters.md) tests
-- asset_machine.monochrome, which 0019 already stores (decided from the pixels'
-- chroma at ingest and by `loupe enrich`, loupe/pixels/colours.py). Its driver
-- (filters/queries.py DRIVER["monochrome"]) enumerates one tenant's monochrome
-- (or colour) assets through this index, as cutout's does through 0020's.
CREATE INDEX asset_machine_monochrome_idx ON asset_machine (tenant_id, monochrome);
