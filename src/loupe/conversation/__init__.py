"""Conversational search (X4): a sentence compiles into the filter tree of
the advanced search plus free text, with an explicit intent; a conversation is
a server-side state owned by its user.

- :mod:`.parse`: the deterministic compiler (tokenizer, lexicon, intents);
- :mod:`.dates`: date phrases -> half-open UTC ranges (dateparser, fixed clock);
- :mod:`.state`: applying a turn to the state;
- :mod:`.store` / :mod:`.queries`: the owned conversation rows (migration 0021);
- :mod:`.search`: the state through ``Library.search(text, filters=tree)``;
- :mod:`.corpus`: exact-match evaluation on eval/conversation/corpus.jsonl.
"""
from .parse import SentenceError, Turn, parse
from .state import State, apply

__all__ = ["SentenceError", "Turn", "parse", "State", "apply"]
