"""Comparing runs: paired statistics, diffs, the CI gate, the health line and the markdown report.

Above ``evaluation`` (a diff reads two stored runs' reports); below ``cli`` and ``web``.
"""
