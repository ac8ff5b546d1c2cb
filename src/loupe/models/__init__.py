"""Models: the encoders (:mod:`.embedders`), ONNX Runtime sessions
(:mod:`.sessions`), the per-process caches (:mod:`.runtime`), installed model
folders (:mod:`.registry`) and the sentence-transformers export
(:mod:`.st_onnx`). Imports nothing at package level; see README.md for what
it may import."""
