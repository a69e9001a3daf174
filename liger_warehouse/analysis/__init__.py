"""Tables derived from published results: change points and the SQL models of sql/derived/."""
