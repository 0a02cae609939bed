"""ragmeter.evaluation.evaluate."""
