"""Moving a published generation to the current schema version before a refresh builds on it."""
