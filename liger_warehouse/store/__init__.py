"""Where the warehouse keeps its bytes: raw snapshots and compares, exports, reports and digests
(the lake is liger_warehouse/lake/)."""
