"""The demo library builder (``scripts/build_demo_library.sh`` runs
``scripts/demo/build_demo_library.py``, which calls :func:`demo_builder.cli.main`).

One module per source (``tuxpaint``, ``gcompris``, ``openclipart``,
``wallpapers``, ``ifct``, ``skimage``: each has a ``collect_*`` function
returning :class:`demo_builder.common.Item` objects), the parsers they share
(``qt``: Qt resource bundles and translations, QML strings; ``credits``:
DEP-5 / README credit stanzas; ``licences``: licence normalisation and
rights lines), and ``writer`` (files, the ExifTool batch, the manifest).
Only the standard library, Pillow and the ``exiftool`` command are used.
"""
