"""Where the warehouse keeps its bytes: raw snapshots and compares, exports, reports, digests (the lake is liger_warehouse/lake/)."""
