"""SQL of the conversation store (migration 0021).

Every statement is bound to the tenant AND the owner: ``owner_id IS NOT
DISTINCT FROM %(owner_id)s`` makes NULL (the local owner) match only NULL, so
a user never reads, changes or learns the existence of another's conversation
(an admin included).  Parameters are always bound, never assembled.
"""

CREATE = """
INSERT INTO conversation (tenant_id, owner_id, lang)
VALUES (%(tenant_id)s, %(owner_id)s, %(lang)s)
RETURNING id, lang, state, turns, created_at, updated_at
"""

# the conversation, locked for the turn being applied
GET_FOR_UPDATE = """
SELECT id, lang, state, turns, created_at, updated_at
  FROM conversation
 WHERE id = %(id)s AND tenant_id = %(tenant_id)s
   AND owner_id IS NOT DISTINCT FROM %(owner_id)s
   FOR UPDATE
"""

GET = """
SELECT id, lang, state, turns, created_at, updated_at
  FROM conversation
 WHERE id = %(id)s AND tenant_id = %(tenant_id)s
   AND owner_id IS NOT DISTINCT FROM %(owner_id)s
"""

LIST = """
SELECT id, lang, state, turns, created_at, updated_at
  FROM conversation
 WHERE tenant_id = %(tenant_id)s AND owner_id IS NOT DISTINCT FROM %(owner_id)s
 ORDER BY updated_at DESC, id DESC
 LIMIT %(limit)s
"""

# the owner's conversations past the newest %(keep)s (least recently used first
# to go): deleted before a new one is created, so an owner holds at most
# store.MAX_CONVERSATIONS (their turns go by ON DELETE CASCADE)
DROP_OLDEST = """
DELETE FROM conversation
 WHERE id IN (SELECT id FROM conversation
               WHERE tenant_id = %(tenant_id)s AND owner_id IS NOT DISTINCT FROM %(owner_id)s
               ORDER BY updated_at DESC, id DESC
              OFFSET %(keep)s)
RETURNING id
"""

# the turns of one conversation older than its newest %(keep)s (the state
# after each turn is a full snapshot: keeping every turn grew quadratically)
DROP_OLD_TURNS = """
DELETE FROM conversation_turn
 WHERE conversation_id = %(id)s AND n <= %(n)s - %(keep)s
"""

ADD_TURN = """
INSERT INTO conversation_turn (tenant_id, conversation_id, n, sentence, result, state)
VALUES (%(tenant_id)s, %(id)s, %(n)s, %(sentence)s, %(result)s, %(state)s)
"""

SET_STATE = """
UPDATE conversation SET state = %(state)s, turns = %(n)s, updated_at = now()
 WHERE id = %(id)s AND tenant_id = %(tenant_id)s
   AND owner_id IS NOT DISTINCT FROM %(owner_id)s
"""

# the turns of a conversation whose ownership was checked by GET in the same call
TURNS = """
SELECT t.n, t.sentence, t.result, t.state, t.at
  FROM conversation_turn t
  JOIN conversation c ON c.id = t.conversation_id
 WHERE c.id = %(id)s AND c.tenant_id = %(tenant_id)s
   AND c.owner_id IS NOT DISTINCT FROM %(owner_id)s
 ORDER BY t.n
"""

DELETE = """
DELETE FROM conversation
 WHERE id = %(id)s AND tenant_id = %(tenant_id)s
   AND owner_id IS NOT DISTINCT FROM %(owner_id)s
"""
