"""One asset as a viewer may see it: its record (``show``), thumbnail,
original file (verified before it is served) and the collections."""
