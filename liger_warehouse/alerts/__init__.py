"""The nightly digest of what new runs changed, and the webhooks it is sent to."""
