//! One integration binary: every test boots the real `dsh-host` with real plugin libraries.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the host from their own threads and timers"
)]

mod acp;
mod agents;
mod bad_input;
mod bounds;
mod broken_sessions;
mod browser;
mod browser_restart;
mod cli;
mod client_socket;
mod code_mode;
mod commands;
mod compaction;
mod conformance;
mod enclaves;
mod env_files;
mod escalation;
mod escapes;
mod examples;
mod export;
mod fakellm;
mod faults;
mod goals;
mod headless;
mod headless_hooks;
mod hook_scripts;
mod images;
mod jobs;
mod llm;
mod mcp;
mod model_discovery;
mod plan_mode;
mod plugin_author;
mod postgres;
mod postgres_follow;
mod postgres_migrate;
mod presets;
mod products;
mod products_real;
mod products_recorded;
mod providers;
mod pty_tools;
mod questions;
mod reasoning_effort;
mod reload;
mod reload_load;
mod replay;
mod retry;
mod runtime;
mod sandbox;
mod sdk;
mod sdk_clients;
mod seam_compat;
mod session;
mod session_store;
mod session_titles;
mod skills;
mod snapshots;
mod subagent_reports;
mod subagent_tree;
mod subagents;
mod time_context;
mod tools;
mod tui;
mod undo;
mod waterfall;
mod web;
mod web_chat;
mod web_live;
mod web_queue;
mod web_tools;
mod web_undo;
