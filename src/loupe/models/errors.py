"""The error every model module raises: :class:`ModelError`. Imports nothing
from Loupe, so the encoders (:mod:`.embedders`), the session opener
(:mod:`.sessions`) and the exporter (:mod:`.st_onnx`) all sit above it."""


class ModelError(RuntimeError):
    """A model folder that cannot be loaded or run; the message says which file and why."""
