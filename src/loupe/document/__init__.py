"""The search document: compiled per asset and language, analysed by PostgreSQL."""
