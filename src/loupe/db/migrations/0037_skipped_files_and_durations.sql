-- 0037: files the ingest does not read are listed, and a video asset keeps
-- its duration.
--
-- A file under an ingested folder whose format Loupe does not read (a .psd,
-- a .txt, a sidecar with no picture beside it) used to be passed over in
-- silence: the run counted fewer files than the folder held and reported no
-- problem. It is now recorded in ingest_failure with severity 'skipped' and
-- its reason ("not a supported format: .psd"), so `loupe failures`, the
-- ingest summary and the status page list it beside the errors and warnings.
ALTER TABLE ingest_failure DROP CONSTRAINT IF EXISTS ingest_failure_severity_check;
ALTER TABLE ingest_failure ADD CONSTRAINT ingest_failure_severity_check
    CHECK (severity IN ('error', 'warning', 'skipped'));

-- A video asset's length in seconds (null for a still picture): its width
-- and height are those of its poster frame, its thumbnail and machine words
-- come from that frame.
ALTER TABLE asset ADD COLUMN duration_s double precision
    CHECK (duration_s IS NULL OR duration_s >= 0);
