"""ragmeter.feedback."""
