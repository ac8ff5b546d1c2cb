-- 0007: the web app (issue 6). Login sessions (cookie) and API bearer
-- tokens are one kind of secret: 32 random bytes handed to the client once;
-- only their SHA-256 is stored (a random 256-bit secret needs no slow hash —
-- passwords are argon2, in principal). Bound to a tenant and a user; a
-- deleted user's sessions and tokens go with it.
CREATE TABLE web_token (
    id            bigserial PRIMARY KEY,
    tenant_id     bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    kind          text NOT NULL CHECK (kind IN ('session', 'api')),
    label         text NOT NULL DEFAULT '',
    token_sha256  bytea NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX web_token_user_idx ON web_token (user_id);
