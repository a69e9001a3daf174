"""Checks on a staged generation and the regression watch over a published one."""
