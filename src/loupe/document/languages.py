"""Language codes and the PostgreSQL text-search configuration each one uses.

Loupe's analyzer configurations are PostgreSQL's Snowball configurations with
accents folded (created by migration 0001 as ``loupe_<name>``). A language
without a Snowball stemmer falls back to ``loupe_simple`` (lower-casing and
accent folding, no stemming).
"""

from __future__ import annotations

# ISO 639-1 code -> PostgreSQL Snowball configuration name (PostgreSQL 18 ships these).
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish",
    "nl": "dutch", "en": "english", "et": "estonian", "fi": "finnish", "fr": "french",
    "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian",
    "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian",
    "nb": "norwegian", "nn": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish",
}


def normalize_lang(tag: str) -> str:
    """Reduce a language tag (``fr-FR``, ``en_GB``, ``x-default``) to its primary subtag.

    Returns ``'x-default'`` unchanged; other tags lower-cased, e.g. ``'fr'``.
    """
    tag = tag.strip()
    if tag.lower() == "x-default":
        return "x-default"
    return tag.replace("_", "-").split("-")[0].lower()


def ts_config(lang: str) -> str:
    """Return the text-search configuration for a language code, e.g. ``'loupe_french'``."""
    return "loupe_" + SNOWBALL.get(normalize_lang(lang), "simple")


#: Languages without a Snowball stemmer that Loupe still accepts, analysed
#: with ``loupe_simple`` (lower case, accents folded, no stemming): ISO 639-1
#: codes of widely used languages.
UNSTEMMED = {"zh", "ja", "ko", "pl", "cs", "sk", "sl", "hr", "bg", "uk", "he", "fa", "th",
             "vi", "ms", "is", "lv", "mt", "cy", "sq", "mk", "bn", "ur", "sw", "tl"}


def validate_languages(langs: list[str]) -> list[str]:
    """Normalise a list of library languages (order kept, duplicates dropped).

    Raises:
        ValueError: the list is empty, or a code is neither a Snowball language
            (:data:`SNOWBALL`) nor one of :data:`UNSTEMMED`.
    """
    out: list[str] = []
    for lang in langs:
        if not lang.strip():
            continue
        code = normalize_lang(lang)
        if code not in SNOWBALL and code not in UNSTEMMED:
            known = ", ".join(sorted(set(SNOWBALL) | UNSTEMMED))
            raise ValueError(f"unknown language code {lang!r}: use an ISO 639-1 code Loupe "
                             f"has an analyzer for ({known})")
        if code not in out:
            out.append(code)
    if not out:
        raise ValueError("a library needs at least one language, e.g. --languages en")
    return out


def query_language(langs: list[str], lang: str | None) -> str:
    """The language a query asks for among the library languages ``langs``
    (first = default): ``lang`` normalised, or ``langs[0]`` when none given.

    Raises:
        ValueError: ``lang`` is not one of ``langs`` (the message says how to add it).
    """
    if not lang:
        return langs[0]
    code = normalize_lang(lang)
    if code not in langs:
        raise ValueError(f"{lang!r} is not a language of this library ({', '.join(langs)}): "
                         f"add it with 'loupe init --languages {','.join(langs + [code])}'")
    return code
