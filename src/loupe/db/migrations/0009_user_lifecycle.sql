-- 0009: the user lifecycle (issue 11): disable / enable, password reset,
-- token revocation and deletion, each written to the audit log.
--
-- A disabled user keeps its grants, groups and name but cannot log in, and
-- its sessions and API tokens stop working at once (the viewer of every
-- request is resolved through principal, and disabling deletes its tokens).
ALTER TABLE principal ADD COLUMN disabled_at timestamptz;

-- The audit log was made for bulk actions on a search's result set; an action
-- on a user has no query, language, verdict or total. Those columns become
-- optional (bulk rows still fill every one of them) and `target` names the
-- user acted on (kept as text: the row outlives a deleted user).
ALTER TABLE audit_log
    ALTER COLUMN query DROP NOT NULL,
    ALTER COLUMN lang DROP NOT NULL,
    ALTER COLUMN verdict DROP NOT NULL,
    ALTER COLUMN total DROP NOT NULL,
    ALTER COLUMN total_exact DROP NOT NULL,
    ALTER COLUMN confirmed DROP NOT NULL,
    ADD COLUMN target text;
