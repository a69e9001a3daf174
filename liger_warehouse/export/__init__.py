"""Exports of warehouse results to other formats (kernelindex.dev records)."""

from liger_warehouse.export.kernelindex import kernelindex_record, result_from_kernelindex
from liger_warehouse.export.record_schema import validate_record

__all__ = ["kernelindex_record", "result_from_kernelindex", "validate_record"]
