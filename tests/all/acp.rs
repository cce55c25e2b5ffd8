//! `dsh-host --profile acp` through the real binary (being built).
