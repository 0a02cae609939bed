"""ragmeter.gold."""
