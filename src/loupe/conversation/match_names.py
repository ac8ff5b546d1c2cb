"""The name and word matchers of the conversation's compiler: collections,
keywords, creators, people, places, media types, the lexicon's phrases and a
name standing alone. Each takes the sentence scan (``scan``:
:class:`loupe.conversation.parse._Scan`) and a token index and returns the index
after what it read; ``_Scan``'s methods of the same name call them."""

from __future__ import annotations

import re

from . import lexicon as L
from .tokens import MEDIA_TYPE as _MEDIA
from .tokens import is_cap as _is_cap
from .tokens import unquote as _unquote


def m_collection(scan, i: int, neg: int | None) -> int:
    k = i
    while k < scan.n and scan.low[k] in L.COLLECTION_LEAD:
        k += 1
    if k >= scan.n:
        return 0
    if scan.low[k] in L.COLLECTION_NOUNS and k + 1 < scan.n:      # collection Lisbonne
        q = _unquote(scan.toks[k + 1])
        if q:
            return scan.emit({"collection": q}, i, k + 2, neg)
        e = scan.name_run(k + 1, digits=True)
        if e > k + 1:
            # a name may go on in lower case ("collection Charte graphique"): up to
            # three more words that no matcher, cue or filler reads, to the clause's end
            x = e
            while x < scan.n and x - e < 3 and scan.plain_word(x):
                x += 1
            if x == scan.n or scan.low[x] == "," or not scan.plain_word(x):
                e = x
            return scan.emit({"collection": " ".join(scan.toks[k + 1:e])}, i, e, neg)
        return 0
    q = _unquote(scan.toks[k])
    e = k + 1 if q else scan.name_run(k, digits=True)
    if e > k and e < scan.n and scan.low[e] in L.COLLECTION_NOUNS and (k > i or scan.low[i] != "the"):
        return scan.emit({"collection": q or " ".join(scan.toks[k:e])}, i, e + 1, neg)
    return 0


def m_keyword(scan, i: int, neg: int | None) -> int:
    k = scan.phrase(i, L.KEYWORD_CUES)
    if not k:
        return 0
    if i + k + 1 < scan.n and scan.low[i + k] in ("is", "est", ",", "=", "either", "soit") \
            and scan.low[i + k + 1] != ",":
        k += 1                       # "whose keyword is X", "keyword: X", "tagged either X or Y"
    if i + k >= scan.n or scan.toks[i + k] == ",":
        scan.unparsed.append(" ".join(scan.toks[i:i + k]))
        return 0
    v = _unquote(scan.toks[i + k]) or scan.toks[i + k]
    if len(v) > 2 and v[0] == v[-1] == "'":       # tagged 'holiday'
        v = v[1:-1]
    e = scan.emit({"keyword": v}, i, i + k + 1, neg)
    # "tagged beach or sea", "with the keywords dog and cat": more values of the cue
    while e + 1 < scan.n and scan.low[e] in L.CONNECT_OR | {"and", "et"} and (
            _unquote(scan.toks[e + 1]) is not None or scan.keyword_word(e + 1)):
        scan.role[e] = "conn"
        v = _unquote(scan.toks[e + 1]) or scan.toks[e + 1]
        e = scan.emit({"keyword": v}, e + 1, e + 2, neg)
    return e


def keyword_word(scan, x: int) -> bool:
    """A word that can be one more keyword after "tagged a and": read by no table
    and not the start of another predicate (a place, a name, a date)."""
    return scan.unread_word(x) and not _is_cap(scan.toks[x])


def m_creator(scan, i: int, neg: int | None) -> int:
    k = scan.phrase(i, L.CREATOR_STRONG)
    if k:
        e = scan.name_run(i + k) if i + k < scan.n else i + k
        if e == i + k:
            e = scan.lower_run(i + k)
        if e == i + k:
            scan.unparsed.append(" ".join(scan.toks[i:i + k]))
            return 0
        return scan.emit({"creator": " ".join(scan.toks[i + k:e])}, i, e, neg)
    if _is_cap(scan.toks[i]) and i > 0 and scan.low[i - 1] in ("that", "which", "what", "que", "qu'"):
        e = scan.name_run(i)
        v = e + (e < scan.n and scan.low[e] in ("a", "has", "had", "ont"))
        if e > i and v < scan.n and scan.low[v] in L.CREATOR_VERBS:
            return scan.emit({"creator": " ".join(scan.toks[i:e])}, i, v + 1, neg)
    if (scan.low[i] in L.CREATOR_CUES or scan.low[i] in L.CREATOR_SIGNED) and i + 1 < scan.n:
        e = scan.name_run(i + 1)
        if e > i + 1:
            return scan.emit({"creator": " ".join(scan.toks[i + 1:e])}, i, e, neg)
    if scan.low[i] in L.CREATOR_ANAPHOR and i + 2 < scan.n and scan.low[i + 1] in ("de", "d'"):
        e = scan.name_run(i + 2)
        if e > i + 2:
            name = " ".join(scan.toks[i + 2:e])
            c = L.countries().get(name.lower())
            # "celles de X" is the creator, unless the conversation filters by place
            # and not by creator ("et aussi celles de Porto" after a city)
            fld = "location" if "location" in scan.prev_fields and "creator" not in \
                scan.prev_fields else "creator"
            return scan.emit({"country": c} if c else {fld: name}, i, e, neg)
    return 0


def m_person(scan, i: int, neg: int | None) -> int:
    k = scan.phrase(i, L.PERSON_PHRASES) or (1 if scan.low[i] in L.PERSON_CUES else 0)
    if k and i + k < scan.n:
        e = scan.name_run(i + k)
        if e > i + k:
            return scan.emit({"person": " ".join(scan.toks[i + k:e])}, i, e, neg)
    return 0


def m_place(scan, i: int, neg: int | None) -> int:
    if scan.low[i] == "of" and i + 1 < scan.n:
        # "pictures of Paris": a country, or one capitalised word, is a place;
        # "of Ana Silva" (two words or more) is a person unless its first word
        # starts place names ("New", "San", "Saint"...)
        e = scan.name_run(i + 1)
        name = " ".join(scan.toks[i + 1:e])
        c = L.countries().get(name.lower()) if e > i + 1 else None
        if c:
            return scan.emit({"country": c}, i, e, neg)
        if e == i + 2 and i > 0 and scan.low[i - 1] in L.FILLERS:
            return scan.emit({"location": name}, i, e, neg)
        if e >= i + 3 and i > 0 and scan.low[i - 1] in L.FILLERS \
                and scan.low[i + 1] not in L.PLACE_PREFIXES:
            # "photos of Ana Silva": a first and last name is a person
            # ("pictures of New York", "of San Sebastián" stay places)
            return scan.emit({"person": name}, i, e, neg)
        if e >= i + 3 and i > 0 and scan.low[i - 1] in L.FILLERS:
            return scan.emit({"location": name}, i, e, neg)
        return 0
    if scan.low[i] not in L.PLACE_CUES or i + 1 >= scan.n:
        return 0
    nxt = scan.toks[i + 1]
    if scan.phrase(i + 1, L.PHRASES) and scan.low[i + 1] not in L.countries() \
            and (not _is_cap(nxt) or nxt.isupper()):
        return 0                    # "pas de PNG", "in PNG", "en JPEG": a format, not a place
    if scan.low[i + 1] in ("la", "le", "l'", "les", "the") and i + 2 < scan.n:
        # "de la Norvège", "from the Netherlands", "in the UK": a country after its article
        for k in range(min(4, scan.n - i - 2), 0, -1):
            c = L.countries().get(" ".join(scan.low[i + 1:i + 2 + k])) or \
                L.countries().get(" ".join(scan.low[i + 2:i + 2 + k]))
            if c and (k > 1 or _is_cap(scan.toks[i + 2]) or scan.low[i + 2] in L.countries()):
                return scan.emit({"country": c}, i, i + 2 + k, neg)
        e = scan.name_run(i + 2)
        if e > i + 2 and scan.low[i] in ("at", "near", "in", "from", "à", "près") \
                and not (e < scan.n and scan.low[e] in L.COLLECTION_NOUNS) \
                and not scan.misspelt_month(i + 2):
            # "at the Louvre", "in the Alps": a named place after its article
            return scan.emit({"location": " ".join(scan.toks[i + 2:e])}, i, e, neg)
    e = scan.name_run(i + 1)
    if e == i + 2 and scan.misspelt_month(i + 1):
        # "shot in Febtember", "en Octobar 2019": a date nobody can read, not a place
        s0 = i - 1 if i > 0 and scan.low[i - 1] in L.DATE_VERBS else i
        if e < scan.n and re.fullmatch(r"\d{4}", scan.toks[e]):
            e += 1
        scan.unparsed.append(" ".join(scan.toks[s0:e]))
        for k in range(s0, e):
            scan.role[k] = "used"
        return e
    if e > i + 1:
        name = " ".join(scan.toks[i + 1:e])
        c = L.countries().get(name.lower())
        if not c and scan.low[i] in ("de", "d'") and e >= i + 3 and i > 0 \
                and scan.low[i - 1] in L.IMAGE_NOUNS and scan.low[i + 1] not in L.PLACE_PREFIXES:
            # "des photos de Léa Roux": like "photos of Ana Silva", a person
            return scan.emit({"person": name}, i, e, neg)
        return scan.emit({"country": c} if c else {"location": name}, i, e, neg)
    c = L.countries().get(scan.low[i + 1])        # a lower-case country name
    if c:
        return scan.emit({"country": c}, i, i + 2, neg)
    return 0


def alone_in_clause(scan, i: int, j: int) -> bool:
    """Whether tokens i..j are the only words of their clause besides cue words,
    determiners and fillers (the clause ends at a comma or the sentence's end).
    A word before i that no table read counts as a word of the clause whether it
    is plain text or negated text (role ``negtext``): in "except those captioned
    Omar Haddad" the name is not alone, "captioned" is said with it."""
    free = L.FILLERS | L.NEGATE | L.RESTRICT | L.ADD | L.CONNECT | L.REPLACE_WORDS
    k = i - 1
    while k >= 0 and scan.low[k] != ",":
        if scan.role[k] in ("text", "negtext") and scan.low[k] not in free:
            return False
        k -= 1
    k = j
    while k < scan.n and scan.low[k] != ",":
        step = max(scan.phrase(k, t) for t in (L.ADD_PHRASES, L.NEGATE_PHRASES,
                                               L.RESTRICT_PHRASES, L.FILLER_PHRASES))
        if not step and scan.low[k] not in free:
            return False
        k += step or 1
    return True


def has_cue(scan) -> bool:
    """Whether the sentence holds a negation, restriction or add cue word or phrase."""
    words = L.NEGATE | L.RESTRICT | L.ADD
    tables = (L.NEGATE_PHRASES, L.RESTRICT_PHRASES, L.ADD_PHRASES)
    return any(w in words for w in scan.low) or any(
        scan.phrase(k, t) for k in range(scan.n) for t in tables)


def m_bare_name(scan, i: int, neg: int | None) -> int:
    """A name with no cue, alone in its clause of a follow-up turn ("add Spain
    too", "et Hugo Petit aussi", "retire l'Italie"): a country name (en or fr,
    any case) is the country; a capitalised name is the person, creator or
    place field the conversation already filters by (first of person,
    creator, location), a first and last name with none of them the person.
    In a first turn, without a cue ("Spain" after "boats" may start a new
    search), or beside other words, a name stays free text."""
    if not scan.has_previous or _unquote(scan.toks[i]) is not None or not scan.has_cue():
        return 0
    e = scan.name_run(i)
    c = L.countries().get(" ".join(scan.low[i:e if e > i else i + 1]))
    if c and scan.alone_in_clause(i, e if e > i else i + 1):
        return scan.emit({"country": c}, i, e if e > i else i + 1, neg)
    if e == i or not scan.alone_in_clause(i, e):
        return 0
    name = " ".join(scan.toks[i:e])
    fld = next((f for f in ("person", "creator", "location") if f in scan.prev_fields), None)
    if fld is None and e - i >= 2:
        fld = "person"
    return scan.emit({fld: name}, i, e, neg) if fld else 0


def m_media(scan, i: int, neg: int | None) -> int:
    k = 2 if scan.low[i:i + 2] in (["au", "format"], ["media", "type"], ["mime", "type"],
                                   ["type", "mime"], ["de", "type"], ["of", "type"]) \
        else (1 if scan.low[i] in ("format", "type") else 0)
    if i + k < scan.n and _MEDIA.match(scan.low[i + k]):
        return scan.emit({"media_type": scan.low[i + k]}, i, i + k + 1, neg)
    return 0


def m_phrase(scan, i: int, neg: int | None) -> int:
    k = scan.phrase(i, L.PHRASES)
    if k:
        return scan.emit(dict(L.PHRASES[tuple(scan.low[i:i + k])]), i, i + k, neg)
    return 0


def more_in_clause(scan, i: int) -> bool:
    """Whether words other than fillers follow i before the clause ends (a comma,
    a connector or the end).  Under a negation, "not the photos in black and
    white" names what is taken out after the generic noun "photos"; "not the
    photos" names photos.  (After "only", "only photos of dogs" stays kind photo.)"""
    for k in range(i, scan.n):
        if scan.low[k] == "," or scan.low[k] in L.CONNECT or scan.low[k] in L.CONNECT_OR:
            return False
        if scan.low[k] not in L.FILLERS:
            return True
    return False
