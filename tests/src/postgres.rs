//! A throwaway PostgreSQL cluster for one test (the `dsh-pg-cluster` crate, shared with the
//! benchmarks).

pub use dsh_pg_cluster::Cluster;
