"""Ingest: walk folders, read EXIF/IPTC/XMP with ExifTool, hash, decode, thumbnail, store."""
