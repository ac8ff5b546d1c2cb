"""Vector lanes and fusion on tiny real ONNX models (V1–V7, F1–F3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from imaging import make_image, write_sidecar
from PIL import Image
from tinymodels import build_clip, build_nomic

from loupe import Library
from loupe.models import registry, runtime
from loupe.models.embedders import ModelError
from loupe.models.preprocess import PreprocessConfig, preprocess
from conftest import without_machine_words


def test_preprocessing_equals_a_hand_computed_tensor():
    # a 4x2 image: columns of known colours
    px = [[(0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)],
          [(255, 255, 255), (255, 0, 0), (0, 255, 0), (51, 102, 153)]]
    im = Image.new("RGB", (4, 2))
    for y, row in enumerate(px):
        for x, c in enumerate(row):
            im.putpixel((x, y), c)
    cfg = PreprocessConfig.from_dict({"size": 2, "mean": [0.5, 0.25, 0.0], "std": [0.5, 0.25, 1.0],
                                      "interpolation": "nearest", "resize_mode": "shortest"})
    # shortest side 2 -> no resize (4x2), centre crop 2x2 -> columns 1 and 2
    crop = np.array([[px[0][1], px[0][2]], [px[1][1], px[1][2]]], dtype=np.float32) / 255.0
    want = ((crop - [0.5, 0.25, 0.0]) / [0.5, 0.25, 1.0]).transpose(2, 0, 1)
    got = preprocess(im, cfg)
    assert got.shape == (3, 2, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-6)
    # squash: 4x2 -> 2x2 keeps columns 0 and 2 (nearest); longest: 4x2 -> 2x1 padded
    sq = preprocess(im, PreprocessConfig.from_dict({**cfg.__dict__, "size": 2, "resize_mode": "squash",
                                                    "mean": cfg.mean, "std": cfg.std}))
    assert sq.shape == (3, 2, 2)
    lo = preprocess(im, PreprocessConfig.from_dict({"size": 2, "mean": [0, 0, 0], "std": [1, 1, 1],
                                                    "interpolation": "nearest",
                                                    "resize_mode": "longest", "fill_color": 0}))
    assert lo.shape == (3, 2, 2) and float(lo[:, 1, :].sum()) == 0.0  # padded row is fill 0


@pytest.fixture
def clip_dir(tmp_path: Path) -> Path:
    return build_clip(tmp_path / "src" / "tiny-clip")


@pytest.fixture
def colours(lib: Library, photos: Path) -> Library:
    for name, color, title in [("teapot.png", (255, 0, 0), "Scarlet teapot"),
                               ("lawn.png", (0, 255, 0), "Lawn"),
                               ("ocean.png", (0, 0, 255), "Ocean view")]:
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    without_machine_words(lib)  # the pixels' colours reach search through the image lane only
    return lib


def ids_titles(res) -> list[str]:
    return [h.title for h in res.hits]


def test_install_verify_use_and_search_by_pixels(colours: Library, clip_dir: Path):
    lib = colours
    info = lib.install_model(clip_dir)
    assert (info["name"], info["kind"], info["dims"]) == ("tiny-clip", "clip-onnx", 4)
    assert lib.verify_model("tiny-clip")["image"] is True
    lib.use_model("tiny-clip", "image")
    [summary] = lib.embed()
    assert (summary.lane, summary.written, summary.failed) == ("image", 3, [])
    # "red photo": no word matches; the pixels of the red picture do
    res = lib.search("red photo")
    assert ids_titles(res) == ["Scarlet teapot"]
    assert res.lanes == ["lexical", "image"] and res.verdict == "unknown"
    ex = res.hits[0].explain
    assert ex["lexical"]["rank"] is None and ex["image"]["rank"] == 1
    assert ex["image"]["distance"] == pytest.approx(1 - 1 / np.sqrt(1 + 2 * 0.02 ** 2 / 1), abs=0.01)


def test_threshold_cuts_and_ties_break_by_asset_id(colours: Library, clip_dir: Path):
    lib = colours
    lib.install_model(clip_dir)
    lib.use_model("tiny-clip", "image")
    lib.embed()
    # "red blue": cosine distance 1 - 1/sqrt(2) = 0.29 to red and blue, 1.0 to green;
    # the 2-word threshold is 0.42: green is cut
    res = lib.search("red blue")
    # equal distances: the lower asset id first (files were ingested in path
    # order: lawn 1, ocean 2, teapot 3)
    assert ids_titles(res) == ["Ocean view", "Scarlet teapot"]
    assert [h.asset_id for h in res.hits] == [2, 3]
    assert [round(h.explain["image"]["distance"], 3) for h in res.hits] == [0.293, 0.293]
    # a stricter threshold cuts everything
    cfg_path = lib.home / "models" / "tiny-clip" / registry.CONFIG_FILE
    cfg = registry.get_model(lib.home, "tiny-clip").config
    cfg["thresholds"]["2"] = 0.2
    cfg_path.write_text(__import__("json").dumps(cfg))
    assert lib.search("red blue").total == 0


def test_one_word_rule(colours: Library, clip_dir: Path):
    lib = colours
    lib.install_model(clip_dir)
    lib.use_model("tiny-clip", "image")
    lib.embed()
    # "red" is in no document: the image lane's red teapot is not enough (V5)
    assert lib.search("red").total == 0
    # a one-word query that matches words keeps them, ordered by RRF
    res = lib.search("ocean")
    assert ids_titles(res) == ["Ocean view"] and res.verdict == "complete"


def test_model_a_is_never_compared_with_model_b(colours: Library, tmp_path: Path):
    lib = colours
    lib.install_model(build_clip(tmp_path / "a" / "clip-a"))
    lib.install_model(build_clip(tmp_path / "b" / "clip-b", swap=True))  # same width, other space
    lib.use_model("clip-a", "image")
    lib.embed()
    assert ids_titles(lib.search("red photo")) == ["Scarlet teapot"]
    lib.use_model("clip-b", "image")
    # clip-b has no vectors yet: model A's vectors are not used with B's query vector
    res = lib.search("red photo")
    assert res.total == 0
    assert res.notices == ["image lane: 3 assets still wait for vectors of clip-b (run 'loupe embed')"]
    lib.embed()
    # in clip-b's space "red" is the green axis: the lawn, computed with B on both sides
    assert ids_titles(lib.search("red photo")) == ["Lawn"]
    counts = dict(lib.conn.execute(
        "SELECT m.name, count(*) FROM asset_vector v JOIN embedding_model m ON m.id = v.model_id "
        "GROUP BY m.name").fetchall())
    assert counts == {"clip-a": 3, "clip-b": 3}


def test_rrf_fusion_matches_a_hand_worked_example(kettle_swatches, clip_dir: Path):
    # lexical lane for "kettle red": A (title "Red kettle", both terms) ranks 1,
    # B ("Kettle") ranks 2; image lane: A (red pixels) distance ~0.29 ranks 1,
    # C (red pixels, no words) ranks 2; B is blue: 1 - 0 = 1.0, cut by 0.42
    # (conftest.KETTLE_SWATCHES).
    lib = kettle_swatches(clip=clip_dir)
    res = lib.search("kettle red")
    got = [(h.title, h.explain["lexical"]["rank"], h.explain["image"]["rank"], round(h.score, 6))
           for h in res.hits]
    a = 1 / 61 + 1 / 61
    b = 1 / 62
    c = 1 / 62
    # bonus first: "kettle red" is literally in no title; then RRF; then asset id (b < c)
    assert got == [("Red kettle", 1, 1, round(a, 6)), ("Kettle", 2, None, round(b, 6)),
                   ("Untitled", None, 2, round(c, 6))]


def test_task_prefixes_reach_the_encoder(lib: Library, photos: Path, tmp_path: Path):
    folder = build_nomic(tmp_path / "src" / "tiny-nomic")
    img = make_image(photos / "k.png", size=(16, 16), color=(255, 0, 0), fmt="PNG")
    write_sidecar(img, "-XMP-dc:Title=red kettle")
    lib.ingest(photos)
    info = lib.install_model(folder)
    assert info["kind"] == "nomic-onnx"
    assert registry.get_model(lib.home, "tiny-nomic").config["prefixes"] == {
        "query": "search_query: ", "document": "search_document: "}
    lib.use_model("tiny-nomic", "text")
    lib.embed()
    emb = registry.embedder(lib.home, "tiny-nomic")
    # the title, then the machine words of the 16 px red square
    assert emb.last_texts == ["search_document: red kettle. icon pictogram, red, square, tiny"]
    lib.search("red kettle")
    assert emb.last_texts == ["search_query: red kettle"]
    # the prefix changes the vector: documents and queries are encoded differently
    q = emb.encode_texts(["red"], task="query")[0]
    d = emb.encode_texts(["red"], task="document")[0]
    assert not np.allclose(q, d)


def test_a_failing_encoder_is_cached_and_search_answers_lexically(colours: Library,
                                                                  clip_dir: Path):
    lib = colours
    lib.install_model(clip_dir)
    lib.use_model("tiny-clip", "image")
    lib.embed()
    now = [1000.0]
    lib.encoder_health = runtime.EncoderHealth(ttl=30, clock=lambda: now[0])
    runtime.MODELS.forget(lib.home / "models" / "tiny-clip")  # loaded by embed(): load again
    (lib.home / "models" / "tiny-clip" / "textual" / "model.onnx").write_bytes(b"not onnx")
    res = lib.search("ocean view")
    assert ids_titles(res) == ["Ocean view"] and res.lanes == ["lexical"]
    assert res.notices[0].startswith("image lane off for about 30 s, answering without it: "
                                     "query encoder of model 'tiny-clip' failed: cannot load")
    assert lib.encoder_health.attempts == {"tiny-clip": 1}
    now[0] += 29
    lib.search("ocean")
    lib.search("lawn")
    assert lib.encoder_health.attempts == {"tiny-clip": 1}  # not retried within 30 s
    now[0] += 2
    lib.search("ocean")
    assert lib.encoder_health.attempts == {"tiny-clip": 2}


def test_model_errors_are_clear(lib: Library, tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match=r"not a model folder Loupe knows"):
        lib.install_model(empty)
    with pytest.raises(ModelError, match=r"no model named 'nope' is installed"):
        lib.use_model("nope", "image")
    with pytest.raises(ModelError, match=r"cannot download 'org/some-model' from the model hub"):
        lib.download_model("org/some-model")
    broken = build_clip(tmp_path / "broken")
    shutil.rmtree(broken / "visual")
    (broken / "visual").mkdir()
    with pytest.raises(ModelError):
        lib.install_model(broken)
    assert lib.models() == []


@pytest.fixture(scope="module")
def minilm_dir(minilm_exported: Path) -> Path:
    return minilm_exported


@pytest.mark.slow  # exports MiniLM to ONNX
def test_minilm_text_lane_bridges_autumn_and_fall(lib: Library, photos: Path, minilm_dir: Path):
    specs = [("park.png", (200, 90, 20), "Fall foliage in the park",
              "Orange maple leaves on the ground"),
             ("street.png", (20, 90, 200), "City traffic at night",
              "Cars and buses on a wet street"),
             ("rice.png", (240, 240, 230), "A bowl of rice", "Steamed white rice"),
             ("giraffe.png", (200, 160, 60), "Giraffe on the savanna",
              "A tall giraffe eating leaves")]
    for name, color, title, desc in specs:
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}", f"-XMP-dc:Description={desc}")
    lib.ingest(photos)
    info = lib.install_model(minilm_dir, name="minilm")
    assert (info["kind"], info["dims"]) == ("sentence-transformers", 384)
    # the seed's thresholds were measured for nomic-embed; MiniLM's distances
    # run larger (here "autumn" is 0.57 from the fall foliage, 0.79 from the
    # next document), so its thresholds are set for it
    assert lib.set_model_thresholds("minilm", {"1": 0.65, "2": 0.6, "3-5": 0.55})["1"] == 0.65
    lib.use_model("minilm", "text")
    [summary] = lib.embed()
    assert (summary.lane, summary.written) == ("text", 4)
    # nobody wrote "autumn": the text lane finds the fall foliage, and only it
    res = lib.search("autumn")
    assert ids_titles(res) == ["Fall foliage in the park"]
    assert res.hits[0].explain["lexical"]["rank"] is None
    assert 0.5 < res.hits[0].explain["text"]["distance"] < 0.65
    # nobody wrote anything close to Madrid: no results is the answer (V5)
    assert lib.search("madrid").total == 0
    # re-embedding skips unchanged texts
    [again] = lib.embed()
    assert (again.written, again.unchanged) == (0, 4)


def test_a_one_word_query_under_a_filter_bridges_only_a_word_the_library_lacks(
        lib: Library, photos: Path, minilm_dir: Path):
    """V5 under a filter: the fused statement's meaning
    fallback saw only the filter's candidates, so "cheetah" filtered to a
    collection without one answered with its nearest animals, while the same
    collection as a scope answered "No results". A word the viewer finds
    elsewhere in the library is known: no meaning-based neighbours. A word
    in no document at all is still bridged by the text lane, filter or not."""
    specs = [("park/foliage.png", (200, 90, 20), "Fall foliage in the park",
              "Foliage of maple trees"),
             ("city/leaves.png", (210, 100, 30), "Orange maple leaves",
              "Leaves on a wet street in the fall"),
             ("city/traffic.png", (20, 90, 200), "City traffic at night",
              "Cars and buses")]
    for name, color, title, desc in specs:
        (photos / name).parent.mkdir(exist_ok=True)
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}", f"-XMP-dc:Description={desc}")
    lib.ingest(photos)
    lib.install_model(minilm_dir, name="minilm")
    lib.set_model_thresholds("minilm", {"1": 0.65, "2": 0.6, "3-5": 0.55})
    lib.use_model("minilm", "text")
    lib.embed()
    city = {"collection": "city"}
    # "foliage" is written in park/ only: under the city filter, nothing holds it
    res = lib.search("foliage", filters=city)
    assert (res.total, res.verdict, res.hits) == (0, "complete", [])
    assert ("other assets of the library hold “foliage”, so no meaning-based neighbours "
            "are shown (a one-word query's results hold its word)") in res.notices
    # the same collection as a scope said so already
    assert lib.search("foliage", scope="city").total == 0
    # with no neighbour either, "No results" is proven ("not proven" before)
    res = lib.search("traffic", filters={"collection": "park"})
    assert (res.total, res.verdict, res.hits) == (0, "complete", [])
    assert not any("other assets" in n for n in res.notices)
    # a filter no asset passes: "No results" is proven whatever the word
    # (it said "not proven" beside "no asset passes the filter")
    res = lib.search("zzqqx", filters={"all": [{"collection": "city"}, {"format": "webp"}]})
    assert (res.total, res.verdict, res.total_exact) == (0, "complete", True)
    assert res.notices[-1] == ("no asset passes the filter (in collection “city”, format "
                               "webp), whatever the query")
    # "autumn" is in no document: the text lane bridges it inside the filter
    res = lib.search("autumn", filters=city)
    assert ids_titles(res) == ["Orange maple leaves"]
    assert (res.verdict, res.meaning_only) == ("unknown", True)


def test_index_variants_image_caption_both(colours: Library, clip_dir: Path):
    lib = colours
    lib.install_model(clip_dir)
    assert lib.build_variants("tiny-clip") == {"image": 3, "caption": 3, "both": 3}
    rows = lib.conn.execute("""
        SELECT d.title, v.lane, v.embedding::vector(4)::text FROM asset_vector v
        JOIN search_document d ON d.asset_id = v.asset_id
        ORDER BY d.title, v.lane""").fetchall()
    vec = {(t, lane): np.array(eval(e)) for t, lane, e in rows}
    # the image variant is pixels only: the lawn (green pixels) is on the green axis
    np.testing.assert_allclose(vec[("Lawn", "image")], [0, 1, 0, 0], atol=1e-6)
    # "both" is the normalised sum of image and caption
    s = vec[("Lawn", "image")] + vec[("Lawn", "caption")]
    np.testing.assert_allclose(vec[("Lawn", "both")], s / np.linalg.norm(s), atol=1e-6)


def test_vector_and_asset_counts_follow_deletes(colours: Library, clip_dir: Path, photos: Path):
    lib = colours
    lib.install_model(clip_dir)
    lib.use_model("tiny-clip", "image")
    lib.embed()
    (photos / "lawn.png").unlink()
    (photos / "lawn.png.xmp").unlink()
    assert lib.ingest(photos).removed_assets == 1
    assert lib.conn.execute("SELECT n_assets FROM asset_stat").fetchone() == (2,)
    assert lib.conn.execute("SELECT n_vectors FROM vector_stat").fetchone() == (2,)
    assert lib.search("red photo").notices == []  # nothing waits for a vector


def test_query_vectors_are_cached_until_the_model_is_installed_again(colours: Library,
                                                                    clip_dir: Path):
    lib = colours
    lib.install_model(clip_dir)
    lib.use_model("tiny-clip", "image")
    lib.embed()
    cache = lib.query_vectors
    key = (str(lib.home), "tiny-clip", "red photo")
    first = lib.search("red photo")
    assert key in cache
    hits = cache.hits
    second = lib.search("red photo", offset=0)
    assert cache.hits == hits + 1                         # the encoder was not called again
    assert [h.asset_id for h in second.hits] == [h.asset_id for h in first.hits]
    shutil.rmtree(lib.home / "models" / "tiny-clip")     # removed by hand, installed again:
    lib.install_model(clip_dir)                           # its cached vectors are dropped
    assert key not in cache
