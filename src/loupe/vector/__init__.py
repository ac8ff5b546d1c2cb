"""Vector lanes: embedding text, embedding jobs, HNSW candidate lists (S5, V1–V7)."""
