"""The sweep harness: configuration, plan, work units, supervised execution, results."""
