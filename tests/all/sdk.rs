//! `dsh-host --profile sdk` through the real binary (being built).
