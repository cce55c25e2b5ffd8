//! Plugin `sdk` (being built): the SDK runtime, newline-delimited JSON-RPC 2.0 on stdio.
