//! A real CNCF distribution registry (Debian's `docker-registry`) on a free
//! loopback port, for tests; stopped when dropped.
