"""ragmeter.executors."""
