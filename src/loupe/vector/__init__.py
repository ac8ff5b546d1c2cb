"""Vector lanes: embedding text, embedding jobs, HNSW candidate lists (SPEC S5, V1–V7)."""
