"""Machine words from the pixels (X3): what a picture looks
like and the text inside it, computed offline without any learned image-text
model.

Modules, one per kind of word: ``palette`` (colour names and their words),
``colours`` (k-means in CIE Lab, background, cut-out), ``kind`` (photo,
illustration, clip art, line art, screenshot, document, icon from measured
cues), ``shape`` (orientation, size class), ``ocr`` (RapidOCR, bundled ONNX
models), ``words`` (facts as words in each library language); ``analyse``
decodes once and runs them; ``store`` writes and reads ``asset_machine``;
``enrich`` computes what is missing (``loupe enrich``).
"""
