"""Reading upstream: GitHub (REST API and raw-content host) or a local mirror."""
