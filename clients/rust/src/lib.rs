//! `dsh-client` (being built): a Rust client of the dsh client protocol.
