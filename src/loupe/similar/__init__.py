"""Search by image (X1): perceptual-hash neighbours found by multi-index
hashing, near-duplicate groups, and the image lane's nearest vectors."""
