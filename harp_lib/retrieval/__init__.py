"""Layer 2: the FAISS / keyword index, the retrieval tools and their merge, reference clips."""
