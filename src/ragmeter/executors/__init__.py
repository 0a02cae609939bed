"""Where per-question work runs: local threads or asyncio, a Ray cluster, and the pickling
helpers that let retrievers and clients travel to Ray workers.

A low layer: it imports only ``ragmeter.errors``, so retrievers and judges can use it.
"""
