"""Importing results from other formats (kernelindex.dev records) into the warehouse."""
