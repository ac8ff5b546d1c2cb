"""Controlled vocabulary (S2): import in three formats, assets tagged from
their keywords and folders, found by ancestors, own term weighing most."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.document.vocabulary import VocabularyError, read_vocabulary

PRODUCTS = {
    "name": "products",
    "terms": [
        {"key": "kitchen", "label": "Kitchen", "labels": {"fr": "Cuisine"}},
        {"key": "small", "label": "Small appliances", "parent": "kitchen",
         "labels": {"fr": "Petit électroménager"}},
        {"key": "espresso", "label": "Espresso machine", "parent": "small",
         "synonyms": ["coffee machine"], "labels": {"fr": "Machine à expresso"}},
        {"key": "toaster", "label": "Toaster", "parent": "small"},
        {"key": "garden", "label": "Garden"},
    ],
}

CSV = """key,parent,label,label_fr,synonyms
kitchen,,Kitchen,Cuisine,
small,kitchen,Small appliances,Petit électroménager,
espresso,small,Espresso machine,Machine à expresso,coffee machine
toaster,small,Toaster,,
garden,,Garden,,
"""

TURTLE = """@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <http://example.org/> .
ex:kitchen a skos:Concept ; skos:prefLabel "Kitchen"@en, "Cuisine"@fr .
ex:small a skos:Concept ; skos:prefLabel "Small appliances"@en ; skos:broader ex:kitchen .
ex:espresso a skos:Concept ; skos:prefLabel "Espresso machine"@en ;
    skos:altLabel "coffee machine"@en ; skos:broader ex:small .
ex:toaster a skos:Concept ; skos:prefLabel "Toaster"@en ; skos:broader ex:small .
ex:garden a skos:Concept ; skos:prefLabel "Garden"@en .
"""


@pytest.fixture
def vocab_files(tmp_path: Path) -> dict[str, Path]:
    files = {"json": tmp_path / "products.json", "csv": tmp_path / "products.csv",
             "ttl": tmp_path / "products.ttl"}
    files["json"].write_text(json.dumps(PRODUCTS))
    files["csv"].write_text(CSV)
    files["ttl"].write_text(TURTLE)
    return files


@pytest.mark.parametrize("fmt", ["json", "csv", "ttl"])
def test_formats_read_the_same_tree(vocab_files: dict[str, Path], fmt: str):
    name, terms = read_vocabulary(vocab_files[fmt])
    assert name == "products"
    by_label = {t.labels.get("x-default") or t.labels.get("en"): t for t in terms}
    key = {t.key: t for t in terms}
    parent_label = {lbl: (key[t.parent].labels.get("x-default") or key[t.parent].labels["en"])
                    if t.parent else None for lbl, t in by_label.items()}
    assert parent_label == {"Kitchen": None, "Small appliances": "Kitchen",
                            "Espresso machine": "Small appliances",
                            "Toaster": "Small appliances", "Garden": None}
    assert by_label["Espresso machine"].synonyms == ["coffee machine"]
    assert by_label["Kitchen"].labels["fr"] == "Cuisine"
    # parents always come before their children
    seen = set()
    for t in terms:
        assert t.parent is None or t.parent in seen
        seen.add(t.key)


def test_bad_files_are_refused_with_the_reason(tmp_path: Path):
    cyc = tmp_path / "cyc.csv"
    cyc.write_text("key,parent,label\na,b,A\nb,a,B\n")
    with pytest.raises(VocabularyError, match=r"cycle in parents: a > b > a"):
        read_vocabulary(cyc)
    orphan = tmp_path / "orphan.csv"
    orphan.write_text("key,parent,label\na,zzz,A\n")
    with pytest.raises(VocabularyError, match=r"term 'a' has unknown parent 'zzz'"):
        read_vocabulary(orphan)
    with pytest.raises(VocabularyError, match=r"unknown vocabulary format '.txt'"):
        read_vocabulary(tmp_path / "x.txt")


@pytest.fixture
def shop(lib: Library, photos: Path, vocab_files: dict[str, Path]) -> Library:
    lib.init(languages=["en", "fr"])
    specs = [("espresso.jpg", "Model 4471 in chrome", ["Espresso machine"]),
             ("barista.jpg", "Cafe bar counter", ["coffee machine"]),
             ("kitchen.jpg", "Show kitchen", ["kitchen"]),
             ("toast.jpg", "Morning toast", ["Toaster"]),
             ("roses.jpg", "Roses", ["flowers"])]
    for i, (name, title, keywords) in enumerate(specs):
        img = make_image(photos / name, color=(i * 30, 0, 0))
        write_sidecar(img, f"-XMP-dc:Title={title}", *[f"-XMP-dc:Subject={k}" for k in keywords])
    make_image(photos / "garden" / "bench.jpg", color=(0, 99, 0))  # tagged by its folder
    # a folder name with '_' matches the label "Small appliances"
    make_image(photos / "small_appliances" / "blender.jpg", color=(0, 0, 99))
    lib.ingest(photos)
    info = lib.import_vocabulary(vocab_files["json"])
    assert info == {"vocabulary": "products", "terms": 5, "assets_tagged": 6,
                    "documents_rebuilt": 12}
    return lib


def titles(lib: Library, query: str, lang: str = "en") -> list[str]:
    return [h.title for h in lib.search(query, lang=lang).hits]


def test_found_by_ancestors(shop: Library):
    assert sorted(titles(shop, "appliances")) == ["Cafe bar counter", "Model 4471 in chrome",
                                                  "Morning toast", "blender.jpg"]
    assert sorted(titles(shop, "kitchen")) == ["Cafe bar counter", "Model 4471 in chrome",
                                               "Morning toast", "Show kitchen", "blender.jpg"]
    assert titles(shop, "garden") == ["bench.jpg"]
    assert titles(shop, "roses") == ["Roses"] and titles(shop, "flowers") == ["Roses"]


def vocab_tf(lib: Library, title: str, term: str) -> float:
    """The keyword-group frequency a term gets in an asset's English postings."""
    return lib.conn.execute("""
        SELECT p.tf[2] FROM lexical_posting p
        JOIN lexicon_term t ON t.id = p.term_id AND t.lang = 'en' AND t.term = %s
        JOIN search_document d ON d.asset_id = p.asset_id AND d.lang = 'en' AND d.title = %s
    """, (term, title)).fetchone()[0]


def test_own_term_weighs_most_and_each_step_up_less(shop: Library):
    # the toaster: own term 1, parent ("small appliances") 0.5, grandparent 0.25
    # (decay 0.5 per step, the default); its keyword "Toaster" adds 1 to its own term
    assert vocab_tf(shop, "Morning toast", "toaster") == 2.0
    assert vocab_tf(shop, "Morning toast", "applianc") == 0.5
    assert vocab_tf(shop, "Morning toast", "kitchen") == 0.25
    # so for "kitchen" the asset whose own term it is comes first
    assert titles(shop, "kitchen")[0] == "Show kitchen"
    # the decay is configurable
    shop.set_lexical_settings(vocab_decay=0.8)
    assert vocab_tf(shop, "Morning toast", "applianc") == pytest.approx(0.8)
    assert vocab_tf(shop, "Morning toast", "kitchen") == pytest.approx(0.64)


def test_labels_per_language(shop: Library):
    assert sorted(titles(shop, "électroménager", lang="fr")) == [
        "Cafe bar counter", "Model 4471 in chrome", "Morning toast", "blender.jpg"]
    assert titles(shop, "cuisine", lang="fr")[0] == "Show kitchen"


def test_vocabulary_shown_in_the_asset_and_replaced_on_reimport(shop: Library, tmp_path: Path):
    espresso = next(h.asset_id for h in shop.search("chrome").hits)
    doc = {d["lang"]: d for d in shop.show(espresso)["documents"]}
    assert doc["en"]["vocabulary"] == "Espresso machine < Small appliances < Kitchen"
    smaller = tmp_path / "products.json"
    smaller.write_text(json.dumps({"name": "products", "terms": [
        {"key": "kitchen", "label": "Kitchen"}]}))
    info = shop.import_vocabulary(smaller)
    assert (info["terms"], info["assets_tagged"]) == (1, 1)
    # only the blender's own folder name (small_appliances) still says appliances
    # (this test once expected no result: the index's remove step had lost
    # that posting when the document was rewritten)
    assert titles(shop, "appliances") == ["blender.jpg"]
    assert shop.vocabularies() == [{"vocabulary": "products", "terms": 1, "assets_tagged": 1}]


ANIMALS = {
    "name": "animals",
    "terms": [
        {"key": "animals", "label": "Animals"},
        {"key": "cats", "label": "Cats", "parent": "animals"},
        {"key": "cats-cartoon", "label": "Cartoon", "parent": "cats"},
        {"key": "insects", "label": "Insects", "parent": "animals"},
        {"key": "insects-cartoon", "label": "Cartoon", "parent": "insects"},
        {"key": "food", "label": "Food"},
        {"key": "fruit", "label": "Fruit", "parent": "food"},
        {"key": "fruit-cartoon", "label": "Cartoon", "parent": "fruit"},
    ],
}


def test_an_ambiguous_label_carries_the_term_its_other_labels_place(lib: Library,
                                                                     photos: Path,
                                                                     tmp_path: Path):
    """Tux Paint's vocabulary has 23 terms labelled "Cartoon";
    a ladybug in animals/insects/cartoon/ carried all of them with their
    ancestors, so "cats" and "fruit" found it. A label of several terms now
    carries those whose ancestors the asset's other labels name (the most of
    them), and none when nothing places it; a label of one term as before."""
    make_image(photos / "animals" / "insects" / "cartoon" / "ladybug.jpg", color=(200, 0, 0))
    make_image(photos / "animals" / "cats" / "cartoon" / "lion.jpg", color=(200, 150, 0))
    loose = make_image(photos / "misc" / "sticker.jpg", color=(0, 0, 200))
    write_sidecar(loose, "-XMP-dc:Subject=cartoon")
    lib.ingest(photos)
    vocab = tmp_path / "animals.json"
    vocab.write_text(json.dumps(ANIMALS))
    lib.import_vocabulary(vocab)

    def vocabulary(name: str) -> str:
        [asset_id] = [h.asset_id for h in lib.search(name).hits]
        return {d["lang"]: d for d in lib.show(asset_id)["documents"]}["en"]["vocabulary"]

    assert vocabulary("ladybug") == "Animals < Insects < Cartoon"   # (all three own terms)
    assert vocabulary("lion") == "Animals < Cats < Cartoon"
    assert vocabulary("sticker") == ""
    assert sorted(h.title for h in lib.search("insects").hits) == ["ladybug.jpg"]
    assert sorted(h.title for h in lib.search("cats").hits) == ["lion.jpg"]
    assert lib.search("fruit").total == 0
    assert lib.search("food").total == 0
