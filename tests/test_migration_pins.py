"""Landed migration files stay as they shipped (docs/architecture.md,
"Migrations"). ``migrate.py`` refuses to open a library whose
applied file was edited, but only once some library has applied it; this
test stops the edit itself, in the repository, before it ships: each landed
file's SHA-256 (as ``migrate`` records it) is pinned here. A new migration
is added to :data:`LANDED` when it lands in main; a file numbered below the
last pinned one that is not pinned is refused too (a number reused or
slipped into the past). No database."""

from __future__ import annotations

from loupe.db.migrate import available, sha256_hex

#: file name -> SHA-256 of the file as shipped.
LANDED = {
    "0001_initial.sql":
        "7caf0829fe80682de73a4c56dbfbf835bf16c6c41e7599cef7c8e2c2b2bf3e62",
    "0002_lexical_index.sql":
        "8a18eee10bf29d4f6b99ac894227b45d284e93f09771702aec1dd91714542ce7",
    "0003_vector_lanes.sql":
        "cd4a1a608c5ad533ca31e6136d906fd9b8d320dce4bc337cb13d1ceae034439b",
    "0004_scopes.sql":
        "e3d0183ae63e1ae6fcd7563249095790786194024fec1f086b6b07edb3d42e9e",
    "0005_permissions.sql":
        "596ae79981d1ebee2b45cf5fd91b4dfdd502081fdb8c4f140d821b3376c18846",
    "0006_evaluation.sql":
        "ca53eedaf25c306003ab04c4cc6b4814e5664fae2fb68f60273e0c9757562ea7",
    "0007_web.sql":
        "bb23728f9d06e762984d5a6a9c639e769ee57d0b16069b4772316a25baa7dc59",
    "0008_index_remove_fix.sql":
        "4b12532b5a83c3f8956fa875e986009d13f796c2e79031a3d7ab58190221a268",
    "0009_user_lifecycle.sql":
        "7e42d6fb2600f13e1dfa622c871516c5dab4ade133bd5bbc8552dcd95d91153f",
    "0011_file_visibility.sql":
        "0e334ae39c98910fd0b45dc010fe6527377123766562e0493a43d735ba3aad68",
    "0013_analyzer_edges.sql":
        "47429e57a7f6341ed338936570d5f3ba855a24c95c930071c1f073f56474f70f",
    "0014_model_identity.sql":
        "f6d0f4e229849b37af8c08759643fa273e115e85965150a256738227c773ab2d",
    "0015_perceptual_hash.sql":
        "273ad8a52b4610502cfa95294ef964203ba64d9b15ea38b798a284f175f0779a",
    "0016_fusion_settings.sql":
        "b6e98d4bf0d22d4a0b96182e0eede9d3e9257e1cf215750a03181f4b52d36fa0",
    "0017_file_documents_reanalysed.sql":
        "4a90da389f8df0f470a92eee186ae7426f4889aba5b0a0b022fcd0009a23d1a9",
    "0019_machine_words.sql":
        "f2f2a6d4ea2f8213b7acd1f281b311cdc1a5530b5f692d45c4bcb517cac4c1ad",
    "0020_filters.sql":
        "c7615632a2a7d9fee386cfc071ee90454ef02f4dcc86ac2d07874b9e14508532",
    "0021_conversation.sql":
        "56b3ba8fb781fb7481b27a1834885345f4f2a0dd3221bc7ba09a65003448838e",
    "0022_people.sql":
        "ec886f519fad642a06233ca2b682fcfab378cd51ce5e59cb31402c8c75b3e70a",
    "0023_added_words_whole_asset.sql":
        "de306bacf0b882392bf2d9c36cf288b192425742f04a0c6ca7f45aa6e919c4c9",
    "0024_filter_person.sql":
        "cda2ab71bb901410fa2ca64ca024b08da2dee17fe60aa46290a01d7db1ef2b7c",
    "0025_monochrome_and_conversation_bounds.sql":
        "79404ba4b11d2b2c73bd8aa2dffa4aff7dca4fc5e326d81914e8157dcf64deec",
    "0026_stored_filter_values.sql":
        "a0b9f9fa982965348352773f6b33039c8327ae0a9cbd97745b0632763fccdbda",
    "0027_file_grants.sql":
        "771cdd3ea55752d6985cd7c21d23ad7ec5e940903f180e084349babebe2e3ab7",
    "0028_machine_facts_from_verified_bytes.sql":
        "ca3c89bb4a27614b0ea2c2fd88721fa33b8c541d2d833df9d5e603844fd92da1",
    "0029_machine_facts_from_private_copies.sql":
        "0c7568355550a8471e876f812b9cf39911647957a7124ccdc44bda0705d68d61",
    "0030_tenant_led_ids.sql":
        "41cb9dd2ef8a53ccd2031fc936b7064b23fddcac9554fd0ffd7c159469b9f398",
    "0031_tenant_in_grants_and_members.sql":
        "b3798ed64ce81d0acdf2d465db479c6b1feac8656dc77d378a5273860d3e4d52",
    "0032_tenant_in_vocabulary_turns_rejections.sql":
        "a6006a2b923eb131796ac8a590e313244033289be318af2f33ad11b761c96967",
    "0033_tenant_in_evaluation.sql":
        "20853d72d10867517a95eac44a0385f3d3b7dddfa1a051da5c81739491fc9ad0",
    "0034_tenant_led_asset_facts.sql":
        "f86dc4ddb93289f918cfa9ef8789db8e64e66a71f17a369015b49ed37ad65a1c",
    "0037_skipped_files_and_durations.sql":
        "beef78b7d33e691284cb87f6abe2cc74d7df1411ab31c78532aae918963757b4",
    "0038_places_gear_and_capture_instant.sql":
        "428029fa1dbd01514f655a7578cb41900a8d6200ca770b9d46ce81e0103e62ae",
    "0039_distance_on_the_sphere.sql":
        "26d1eedd11df4456a7dfaa74aa36079922552fd801fcd6279efae1a01ef722ca",
    "0040_ratings_and_labels_set_in_loupe.sql":
        "f0800cc9cef910b4fd4af8991a55d0aabcf619ff83940400c79a08c22ea9a0df",
    "0047_faces_from_file_regions.sql":
        "9f152a327b980ca47011ab60b4c7724c28747a1479bc9e737fb01dc30d6127db",
}


def test_landed_migrations_are_unedited():
    shipped = {name: sha256_hex(sql.encode("utf-8")) for _, name, sql in available()}
    edited = sorted(n for n, digest in LANDED.items() if shipped.get(n) != digest)
    assert edited == [], (
        f"landed migration(s) {edited} changed or are missing: applied migrations are never "
        f"edited, renamed or removed; restore them and put the change in a new migration file "
        f"(docs/architecture.md, 'Migrations')")


def test_no_new_migration_is_numbered_into_the_past():
    last = max(int(n[:4]) for n in LANDED)
    late = sorted(name for v, name, _ in available() if name not in LANDED and v <= last)
    assert late == [], f"{late}: a new migration takes a number above {last:04d}"
