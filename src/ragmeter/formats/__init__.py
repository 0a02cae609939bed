"""Readers and writers for the file formats other IR tools use (BEIR, TREC)."""
