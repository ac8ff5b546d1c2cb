-- 0021: conversational search (SPEC X4, issue 17 part 2).
--
-- A conversation is a server-side object owned by ONE user: its current
-- search (a filter tree in the shared JSON shape + free text) and its turns.
-- Only its owner reads or changes it (every statement in
-- loupe/conversation/queries.py is bound to tenant_id AND owner_id); an admin
-- does not see another user's conversations. owner_id NULL is the tenant's
-- local owner (the CLI / Python API without a user). A deleted user's
-- conversations go with it.
CREATE TABLE conversation (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    owner_id    bigint REFERENCES principal(id) ON DELETE CASCADE,
    lang        text NOT NULL CHECK (lang IN ('en', 'fr')),
    -- {"filter": node|null, "text": "..."}: the search the turns built
    state       jsonb NOT NULL DEFAULT '{"filter": null, "text": ""}'::jsonb,
    turns       integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_owner_idx ON conversation (tenant_id, owner_id, updated_at DESC);

-- One row per sentence: what it said, what it was understood to say (the
-- contract's turn result) and the state after it. sentence NULL: the state was
-- edited by hand (a chip removed or changed in the web app / API).
CREATE TABLE conversation_turn (
    conversation_id bigint NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
    n               integer NOT NULL,
    sentence        text CHECK (length(sentence) <= 1000),
    result          jsonb NOT NULL,
    state           jsonb NOT NULL,
    at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, n)
);
