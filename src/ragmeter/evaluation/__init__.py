"""Orchestration: ``evaluate()``, jobs from specs, scoring, reports, generation, sweeps, judging runs.

The modules are imported one by one (``ragmeter.evaluation.evaluate`` …); this package
re-exports nothing, so importing one part does not import the others.
"""
