"""Scoped search: collections whose members are never lost to a tenant-wide
cap, with guaranteed bands and an honest verdict (C1–C5)."""
