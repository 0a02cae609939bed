"""The gold set: the item model, reading and writing its files, finding quotes, and reviewing
candidates into it. Pure data: no retrieval, no model, no store.
"""
