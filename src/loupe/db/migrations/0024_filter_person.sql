-- 0024: the person predicate of filters (issue 17): people by name, so a
-- {"person": "Name"} filter starts from the few people of that name (then
-- their faces through face_person_idx of 0022) instead of reading every
-- person of the tenant. Names compare case-insensitively and exactly, as the
-- filter does (lower(p.name) = lower(btrim(value))).
CREATE INDEX person_name_idx ON person (tenant_id, lower(name));
