-- 0022: people — faces found on the machine, named only by a person (SPEC X2, issue 19).
--
-- face:          one detected face of an asset: its box (normalised 0..1, top-left, on
--                the picture as displayed), its 128-d descriptor (dlib's
--                dlib_face_recognition_resnet_model_v1), the detector that found it,
--                its quality (size in pixels of the box's shorter side, blur as the
--                variance of the Laplacian of the grey crop), the detector's score (the
--                HOG SVM's margin: higher is surer) and a small JPEG crop.
--                person_id: the cluster it is in (NULL: not clustered yet, or hidden
--                by "not this person" until the next clustering). confirmed: a person
--                said this face is that person (naming the cluster, merging, or
--                confirming it): only confirmed faces of a named person give their
--                asset's search document that name. from_file: confirmed only by a
--                name written over it in one of the asset's files (that name then
--                enters the whole document, not the other files' documents: a member
--                who may read only another file does not find the asset by it).
--                region_name: the name a person
--                wrote over this face in the file (MWG / Microsoft regions), when a
--                named region overlaps the box.
-- face_scan:     one row per asset scanned by a detector version (resumable `loupe faces`):
--                how many faces, or why it was skipped (tiny, clip art, unreadable).
-- person:        a cluster of faces. name NULL: "unnamed person #number". hidden: left
--                out of lists and of search documents.
-- face_rejection: "not this person": the face never joins that person again.
CREATE TABLE person (
    id           bigserial PRIMARY KEY,
    tenant_id    bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    number       integer NOT NULL,
    name         text CHECK (name IS NULL OR (length(name) BETWEEN 1 AND 200)),
    hidden       boolean NOT NULL DEFAULT false,
    named_by     text,
    named_at     timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, number)
);

CREATE TABLE face (
    id           bigserial PRIMARY KEY,
    tenant_id    bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    asset_id     bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    box_x        real NOT NULL CHECK (box_x BETWEEN 0 AND 1),
    box_y        real NOT NULL CHECK (box_y BETWEEN 0 AND 1),
    box_w        real NOT NULL CHECK (box_w > 0 AND box_w <= 1),
    box_h        real NOT NULL CHECK (box_h > 0 AND box_h <= 1),
    descriptor   vector(128) NOT NULL,
    detector     text NOT NULL,
    size_px      integer NOT NULL,
    blur         real NOT NULL,
    score        real NOT NULL,
    crop         bytea,
    region_name  text,
    person_id    bigint REFERENCES person(id) ON DELETE SET NULL,
    confirmed    boolean NOT NULL DEFAULT false,
    from_file    boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX face_asset_idx ON face (asset_id);
CREATE INDEX face_person_idx ON face (person_id, asset_id);
CREATE INDEX face_tenant_idx ON face (tenant_id, id);
-- nearest faces by Euclidean distance (dlib's metric), for incremental clustering
CREATE INDEX face_descriptor_idx ON face USING hnsw (descriptor vector_l2_ops);

CREATE TABLE face_scan (
    asset_id     bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    tenant_id    bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    detector     text NOT NULL,
    faces        integer NOT NULL DEFAULT 0,
    skipped      text,
    scanned_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, detector)
);
CREATE INDEX face_scan_tenant_idx ON face_scan (tenant_id, detector, asset_id);

CREATE TABLE face_rejection (
    face_id      bigint NOT NULL REFERENCES face(id) ON DELETE CASCADE,
    person_id    bigint NOT NULL REFERENCES person(id) ON DELETE CASCADE,
    rejected_by  text,
    rejected_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (face_id, person_id)
);

-- An asset whose bytes change in place (an edited file keeps its asset, SPEC S7)
-- is scanned again: its scan rows go. Its faces stay until then, and a face found
-- again at the same place keeps its person and confirmation (loupe.faces.people.scan),
-- so names people gave survive edits that do not move the faces.
CREATE FUNCTION loupe_faces_rescan() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM face_scan WHERE asset_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER asset_faces_rescan AFTER UPDATE OF content_sha256 ON asset
FOR EACH ROW WHEN (OLD.content_sha256 IS DISTINCT FROM NEW.content_sha256)
EXECUTE FUNCTION loupe_faces_rescan();
