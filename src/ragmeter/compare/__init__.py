"""ragmeter.compare.comparison."""
