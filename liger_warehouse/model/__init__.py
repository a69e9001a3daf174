"""What every stage shares: table schemas, digests, versions, workloads, revisions and catalogs."""
