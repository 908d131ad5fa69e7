# Fails without touching torch (cheap under torchrun): rank 1 raises, rank 0 exits 0.
import os

if os.environ["RANK"] == "1":
    raise ValueError("boom on rank 1")
