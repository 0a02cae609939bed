"""Reference retrieval pipelines: chunkers, BM25 (and, with issue 4, dense, fusion, rerank).

Heavy modules are imported on first use, so ``import ragmeter`` stays fast.
"""
