"""Reference retrieval pipelines: chunkers, BM25, dense, fusion, re-ranking, query rewriting.

Heavy modules are imported on first use, so ``import ragmeter`` stays fast.
"""
