"""What every stage shares: errors and exit codes, safe file writes, bounded-time regular
expressions, frozen dataclasses built fast, the JSON Schemas."""
