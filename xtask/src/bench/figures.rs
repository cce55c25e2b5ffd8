//! The figures `cargo xtask bench` reports: which of our figures, the peer's figure it is
//! compared with, the section it is listed in and what it measures (with its unit). The ACP
//! section (`ACP_FIGURES`) is a table of its own, a column per agent (see `acp.rs`).

/// One figure: our name, the peer's name (if it measures the same thing), the unit and what it is.
pub(super) struct Figure {
    pub(super) section: &'static str,
    pub(super) ours: &'static str,
    pub(super) peer: Option<&'static str>,
    pub(super) what: &'static str,
}

impl Figure {
    /// A rate (its unit, the last parenthesis of `what`, is per second: events/s, steps/s) is
    /// better higher; times, sizes and counts are better lower.
    pub(super) fn higher_is_better(&self) -> bool {
        self.what
            .rsplit_once('(')
            .and_then(|(_, unit)| unit.split([';', ')', ' ']).next())
            .is_some_and(|unit| unit.ends_with("/s"))
    }
}

const RUNTIME: &str = "Runtime (issue 2)";
const TOOLS: &str =
    "Agent core (issue 4; ours only: the reference needs Node 22, which cannot run here)";
const SESSION: &str = "Session log and store (issue 3; ours only: the reference needs Node 22, which cannot run here)";

const WEB: &str =
    "Web profile (issue 11; ours only: the reference needs Node 22, which cannot run here)";

const CLIENTS: &str = "Clients (issue 22; ours only)";
const MEMORY: &str = "Where a headless run's memory goes (issue 26; ours only)";
const SANDBOX: &str = "Sandbox (issues 12 and 19; ours only)";

const CONTEXT: &str = "Context (issue 13; ours only)";

const MCP: &str = "MCP (issue 14; ours only)";

const SUBAGENTS: &str = "Subagents (issue 14; ours only)";

const ARCHIVE: &str = "Undo, session export and import (issue 24; ours only)";

pub(super) const ACP: &str = "ACP agents against one instant fake model (issue 22)";

pub(super) const FIGURES: &[Figure] = &[
    Figure {
        section: RUNTIME,
        ours: "emit_1_listeners",
        peer: Some("emit_1_listeners"),
        what: "emit to 1 listener in a plugin library (ns/emit)",
    },
    Figure {
        section: RUNTIME,
        ours: "emit_10_listeners",
        peer: Some("emit_10_listeners"),
        what: "emit to 10 listeners (ns/emit)",
    },
    Figure {
        section: RUNTIME,
        ours: "emit_100_listeners",
        peer: Some("emit_100_listeners"),
        what: "emit to 100 listeners (ns/emit)",
    },
    Figure {
        section: RUNTIME,
        ours: "bail_10_sync_listeners",
        peer: Some("bail_10_sync_listeners"),
        what: "bail over 10 sync listeners (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "serial_10_async_listeners",
        peer: Some("serial_10_async_listeners"),
        what: "serial over 10 async listeners (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "parallel_10_async_listeners",
        peer: Some("parallel_10_async_listeners"),
        what: "parallel over 10 async listeners (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "waterfall_10_async_listeners",
        peer: Some("next_chain_10_async_listeners"),
        what: "waterfall of 10 listeners (peer: a `next` chain over `ctx.on`, Cordis has no waterfall) (ns/call)",
    },
    Figure {
        section: RUNTIME,
        ours: "mount_100_plugins",
        peer: Some("mount_100_plugins"),
        what: "mount 100 plugin rows until all consumers applied (ours: 50 isolate groups of provider + consumer, two libraries) (ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "dispose_100_plugins",
        peer: Some("dispose_100_plugins"),
        what: "dispose those 100 rows (ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "reactive_reload_replace_provider",
        peer: Some("reactive_reload_replace_provider"),
        what: "provider replaced until the consumer re-applied (µs)",
    },
    Figure {
        section: RUNTIME,
        ours: "startup_spawn_to_100_active_wall",
        peer: Some("startup_spawn_to_100_active_wall"),
        what: "process start to 100 rows active (ms; target under 60 ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "startup_rss_100_active",
        peer: Some("startup_rss_100_active"),
        what: "peak RSS with 100 rows active (MiB; target under 25 MiB)",
    },
    Figure {
        section: RUNTIME,
        ours: "hot_reload_file_to_active",
        peer: None,
        what: "library replaced until the new version is active, debounce included (ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "hot_reload_after_debounce",
        peer: None,
        what: "the same after the 150 ms debounce (ms; target under 150 ms)",
    },
    Figure {
        section: RUNTIME,
        ours: "hot_reload_rss_growth_per_reload",
        peer: None,
        what: "RSS growth per library reload (MiB; old copies are never unloaded)",
    },
    Figure {
        section: SESSION,
        ours: "session_log_append_in_memory",
        peer: None,
        what: "appends to the in-memory log, rules checked (events/s)",
    },
    Figure {
        section: SESSION,
        ours: "session_store_append_batched_zstd",
        peer: None,
        what: "appends through the store, batches of 1,000, zstd (events/s; target at least 200,000)",
    },
    Figure {
        section: SESSION,
        ours: "session_store_append_batched_raw",
        peer: None,
        what: "the same, raw JSONL (events/s)",
    },
    Figure {
        section: SESSION,
        ours: "session_store_fsync_per_batch",
        peer: None,
        what: "one single-event batch, i.e. the cost of its fsync (ms)",
    },
    Figure {
        section: SESSION,
        ours: "session_load_100k_zstd",
        peer: None,
        what: "load a 100,000-event session and derive its history, zstd (ms; target under 300)",
    },
    Figure {
        section: SESSION,
        ours: "session_load_100k_raw",
        peer: None,
        what: "the same, raw JSONL (ms)",
    },
    Figure {
        section: SESSION,
        ours: "session_derive_after_step_10",
        peer: None,
        what: "derive_messages after one more step, at step 10 (µs)",
    },
    Figure {
        section: SESSION,
        ours: "session_derive_after_step_10000",
        peer: None,
        what: "the same at step 10,000 (µs; should stay near the step-10 figure)",
    },
    Figure {
        section: SESSION,
        ours: "session_fixture_bytes",
        peer: None,
        what: "bytes of the recorded fixture logs",
    },
    Figure {
        section: SESSION,
        ours: "session_our_packed_bytes",
        peer: None,
        what: "our packed raw encoding of the same events (bytes)",
    },
    Figure {
        section: TOOLS,
        ours: "tool_pipeline_noop_unlogged",
        peer: None,
        what: "one no-op call through the whole pipeline (pre-execute, guards, execute, post-execute waterfalls, finalize, tools/result), outside a session (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "tool_pipeline_noop_logged",
        peer: None,
        what: "the same inside an in-memory session, with tool/call and tool/result appended (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_overhead_at_step_10",
        peer: None,
        what: "harness overhead per step of a real headless turn against an instant model with a no-op tool, session on tmpfs, durability checkpoints left out, around step 10 (µs; target under 200)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_overhead_at_step_10000",
        peer: None,
        what: "the same around step 10,000 (µs; target: flat, under 1.5x the step-10 figure; the history crosses the llm seam by reference)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_instructions_per_step",
        peer: None,
        what: "instructions the host runs per step of that turn (checkpoints left out), counted by callgrind: a 250-step turn's count less a 50-step turn's, over the 200 steps (millions; steadier than the times above, which swing by a quarter between runs here)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_with_checkpoints_at_step_10",
        peer: None,
        what: "the same step as shipped, with the `session-checkpoints` row (a flush at the pre-step and one before the tool body; the one before the request is skipped when the step added only its `step/start` marker), around step 10 (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_with_checkpoints_at_step_10000",
        peer: None,
        what: "the same around step 10,000 (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_step_checkpoints_cost",
        peer: None,
        what: "so the durability checkpoints cost, per step (µs; each is a hop to the blocking pool and back, a write and an fsync, which tmpfs makes nearly free: on a disk the fsync adds the figure of the store section)",
    },
    Figure {
        section: TOOLS,
        ours: "deepseek_request_serialize_at_step_10",
        peer: None,
        what: "request serialization, kept out of the overhead above: the DeepSeek wire body of a step-10 request built from its messages (µs)",
    },
    Figure {
        section: TOOLS,
        ours: "deepseek_request_serialize_at_step_10000",
        peer: None,
        what: "the same at step 10,000 (µs; linear in the history)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_100_sessions_steps_per_s",
        peer: None,
        what: "100 sessions of 20 steps each, all at once in one host, instant model, with checkpoints (steps/s)",
    },
    Figure {
        section: TOOLS,
        ours: "agent_100_sessions_peak_rss",
        peer: None,
        what: "peak RSS of that host (MiB)",
    },
    Figure {
        section: TOOLS,
        ours: "visible_check_request_hash_step_10",
        peer: None,
        what: "model-visible check of a request that carries its history inline: hashing it at step 10 (µs; the loop sends the history by reference, checked in constant time)",
    },
    Figure {
        section: TOOLS,
        ours: "visible_check_request_hash_step_10000",
        peer: None,
        what: "the same at step 10,000 (µs; linear in the history)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_peak_rss",
        peer: None,
        what: "a headless turn of the instant model, every step `bash true`: peak RSS (`VmHWM`) by its 20th step (MiB; goal 30)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_file_pages",
        peer: None,
        what: "of its resident set then: pages of mapped files (the host binary, the plugin libraries, the system's), the written copies among them (MiB; code is mapped 64 KiB around each page the process touches, the kernel's fault-around)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_file_pages_written",
        peer: None,
        what: "of those, pages the loader wrote when it relocated each library's data (MiB; private to the process, the rest is shared page cache)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_anonymous",
        peer: None,
        what: "memory of no file: heap and stacks (MiB)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_host_binary",
        peer: None,
        what: "pages of the `dsh-host` binary (MiB)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_shared_libraries",
        peer: None,
        what: "pages of the libraries the host and the plugin libraries share: the standard library and `plugin-api` (MiB)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_plugin_libraries",
        peer: None,
        what: "pages of the plugin libraries (MiB)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_plugin_code",
        peer: None,
        what: "of those, the libraries' code (MiB; shared page cache, in the resident set because it is mapped)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_plugin_code_mapped",
        peer: None,
        what: "the libraries' code mapped in all (MiB; resident against mapped: the share of 64 KiB windows the start and the steps touch)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_plugin_libraries",
        peer: None,
        what: "plugin libraries mapped (the headless profile's rows)",
    },
    Figure {
        section: MEMORY,
        ours: "headless_rss_per_plugin_library",
        peer: None,
        what: "pages per plugin library (KiB; the standard library and plugin-api are shared, the serde code generated for its own types is its own)",
    },
    Figure {
        section: WEB,
        ours: "web_idle_rss",
        peer: None,
        what: "the web profile serving, idle: resident set of a fresh host 2 s after its sign-in URL, median of 3 (MiB)",
    },
    Figure {
        section: WEB,
        ours: "web_idle_peak_rss",
        peer: None,
        what: "the same host's peak RSS by then (MiB)",
    },
    Figure {
        section: WEB,
        ours: "web_idle_wakeups",
        peer: None,
        what: "the same host left alone for three more seconds: its threads' wakeups (per second, summed; an idle host should sleep)",
    },
    Figure {
        section: WEB,
        ours: "web_history_events",
        peer: None,
        what: "events in the session whose history is paged (a real headless session of the instant model)",
    },
    Figure {
        section: WEB,
        ours: "web_history_tail_p50",
        peer: None,
        what: "session.history tail page (200 items), request to last byte on loopback, p50 (ms; target under 50; the session read again, so its kept fold is only caught up)",
    },
    Figure {
        section: WEB,
        ours: "web_history_tail_p95",
        peer: None,
        what: "the same, p95 (ms)",
    },
    Figure {
        section: WEB,
        ours: "web_history_tail_bytes",
        peer: None,
        what: "bytes of that tail page, assembled items (bytes)",
    },
    Figure {
        section: WEB,
        ours: "web_history_raw_bytes",
        peer: None,
        what: "bytes of the same session's raw events, as a raw-event history would send them (bytes)",
    },
    Figure {
        section: WEB,
        ours: "web_page_history_paint",
        peer: None,
        what: "that session opened again in headless Chromium: from the navigation's start to the frame after its items were painted, read in the page, median of 5 (ms; target under 200)",
    },
    Figure {
        section: WEB,
        ours: "web_page_history_wall",
        peer: None,
        what: "the same seen from the driver: a blank page, then the navigation, until the page says it painted (ms)",
    },
    Figure {
        section: WEB,
        ours: "web_page_js_heap",
        peer: None,
        what: "the page's JS heap after that history (MiB)",
    },
    Figure {
        section: WEB,
        ours: "web_page_dom_nodes",
        peer: None,
        what: "the page's DOM nodes after that history (nodes)",
    },
    Figure {
        section: WEB,
        ours: "web_page_transfer",
        peer: None,
        what: "the page's own files on a first visit (document, scripts, styles, icon), bytes over the wire, headers included; a later visit asks none of them again (kB; the reference's page is 4,500 kB, target under a tenth of it)",
    },
    Figure {
        section: WEB,
        ours: "web_page_stream_long_tasks",
        peer: None,
        what: "a 30 KB Markdown answer streamed in 1,500 deltas at 100 a second, rendered by the page in headless Chromium: tasks over 50 ms (tasks; target 0)",
    },
    Figure {
        section: WEB,
        ours: "web_page_stream_longest_task",
        peer: None,
        what: "the same: the longest task (ms, 0 when none passed 50 ms)",
    },
    Figure {
        section: WEB,
        ours: "web_page_stream_frame_p95",
        peer: None,
        what: "the same: time between animation frames while it streams, p95 (ms; target under 20)",
    },
    Figure {
        section: WEB,
        ours: "web_page_stream_frames",
        peer: None,
        what: "the same: animation frames sampled while it streams (frames)",
    },
    Figure {
        section: WEB,
        ours: "web_page_paint_frames",
        peer: None,
        what: "an answer streamed at 100 events/s to the page in headless Chromium: update frames painted (frames)",
    },
    Figure {
        section: WEB,
        ours: "web_page_commit_to_paint_p50",
        peer: None,
        what: "commit on the host to the page's next frame painted, p50 (ms; target p95 < 50)",
    },
    Figure {
        section: WEB,
        ours: "web_page_commit_to_paint_p95",
        peer: None,
        what: "commit to paint, p95 (ms)",
    },
    Figure {
        section: WEB,
        ours: "web_page_commit_to_paint_p99",
        peer: None,
        what: "commit to paint, p99 (ms)",
    },
    Figure {
        section: WEB,
        ours: "web_live_frames_per_client",
        peer: None,
        what: "updates each of 50 event sockets received during one 2,500-step turn of the instant model (frames)",
    },
    Figure {
        section: WEB,
        ours: "web_live_latency_p50",
        peer: None,
        what: "commit to frame received, over all 50 sockets, p50 (ms, millisecond clock)",
    },
    Figure {
        section: WEB,
        ours: "web_live_latency_p95",
        peer: None,
        what: "the same, p95 (ms; target under 50)",
    },
    Figure {
        section: WEB,
        ours: "web_live_latency_p99",
        peer: None,
        what: "the same, p99 (ms)",
    },
    Figure {
        section: WEB,
        ours: "web_live_latency_mean",
        peer: None,
        what: "the same, mean (ms; both ends read a millisecond clock, so the percentiles move in whole steps where the mean of the 250,000 differences shows a fraction of one)",
    },
    Figure {
        section: WEB,
        ours: "web_live_client_p99_worst",
        peer: None,
        what: "the worst socket's own p99 (ms)",
    },
    Figure {
        section: WEB,
        ours: "web_live_frame_bytes",
        peer: None,
        what: "bytes of an update frame, mean over every socket's (bytes; each of the 50 reads and parses every one)",
    },
    Figure {
        section: WEB,
        ours: "web_live_host_cpu_per_frame",
        peer: None,
        what: "the host's CPU time over that turn (its steps included) per update frame the 50 reading sockets received (µs; the frames queued for the 51st are not counted; most of it the kernel's, a write per frame and socket)",
    },
    Figure {
        section: WEB,
        ours: "web_live_clients_with_lost_or_twice",
        peer: None,
        what: "sockets that missed an update, got one twice or out of order (clients; must be 0)",
    },
    Figure {
        section: WEB,
        ours: "web_live_slow_client_intact",
        peer: None,
        what: "a 51st socket that did not read during the turn, reading afterwards, got every update in order or a resync, never a gap, while the others kept their latency (1 yes, 0 no)",
    },
    Figure {
        section: WEB,
        ours: "web_live_rss_per_connection",
        peer: None,
        what: "server RSS per event socket (KiB)",
    },
    Figure {
        section: CLIENTS,
        ours: "socket_frames_per_client",
        peer: None,
        what: "updates each of 20 clients attached to a web host's client socket received during one turn whose answer streams as 2,000 chunks (frames)",
    },
    Figure {
        section: CLIENTS,
        ours: "socket_latency_p50",
        peer: None,
        what: "commit to frame received, over all 20 clients, p50 (ms, millisecond clock)",
    },
    Figure {
        section: CLIENTS,
        ours: "socket_client_p99_worst",
        peer: None,
        what: "the worst client's own p99 (ms)",
    },
    Figure {
        section: CLIENTS,
        ours: "socket_clients_with_lost_or_twice",
        peer: None,
        what: "clients that missed an update, got one twice or out of order (clients; must be 0)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_step_danger_full_access",
        peer: None,
        what: "one step of a 20-step headless task whose every step runs `bash true`, unconfined (danger-full-access), median (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_step_workspace_write",
        peer: None,
        what: "the same step in workspace-write, the command in the session's enclave (one bubblewrap sandbox kept per session) (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_step_workspace_write_no_enclave",
        peer: None,
        what: "the same step with `enclaves: false`: bubblewrap started for every command, as before the enclaves (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_step_read_only",
        peer: None,
        what: "the same step in read-only (bubblewrap per command: each gets a private /tmp) (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_confinement_per_command",
        peer: None,
        what: "what confining one command costs: workspace-write minus danger-full-access (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_step_read",
        peer: None,
        what: "one step of a 20-step headless task whose every step `read`s a 4 KiB file (workspace-write), median (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "sandbox_step_write",
        peer: None,
        what: "the same step `write`-ing a new 4 KiB file (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "fs_read_by_path",
        peer: None,
        what: "a 4 KiB read opened by path, as before the race fix (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "fs_read_resolved",
        peer: None,
        what: "the same read that also asks the kernel where the open file is, as `read` and `grep` do now (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "fs_publish_by_path",
        peer: None,
        what: "a 4 KiB atomic publication by path, as before the race fix (µs)",
    },
    Figure {
        section: SANDBOX,
        ours: "fs_publish_no_symlinks",
        peer: None,
        what: "the same publication walked from / without following a link and renamed inside the directory handle, as `write` and `edit` do now (µs)",
    },
    Figure {
        section: CONTEXT,
        ours: "compaction_step_at_10",
        peer: None,
        what: "a 10,000-step turn of the instant model with a 20,000-token window, compaction on: one step's overhead around request 10, median (µs)",
    },
    Figure {
        section: CONTEXT,
        ours: "compaction_request_bytes_to_10",
        peer: None,
        what: "the history that request carries, compaction on (bytes; must stop growing once compaction holds it)",
    },
    Figure {
        section: CONTEXT,
        ours: "uncompacted_request_bytes_to_10",
        peer: None,
        what: "the same request with compaction off (bytes)",
    },
    Figure {
        section: CONTEXT,
        ours: "compaction_step_at_1000",
        peer: None,
        what: "a 10,000-step turn of the instant model with a 20,000-token window, compaction on: one step's overhead around request 1,000, median (µs)",
    },
    Figure {
        section: CONTEXT,
        ours: "compaction_request_bytes_to_1000",
        peer: None,
        what: "the history a request carries, mean over every 20th of the 1,000 up to it, compaction on (bytes; must stop growing once compaction holds it)",
    },
    Figure {
        section: CONTEXT,
        ours: "uncompacted_request_bytes_to_1000",
        peer: None,
        what: "the same requests with compaction off (bytes)",
    },
    Figure {
        section: CONTEXT,
        ours: "compaction_step_at_10000",
        peer: None,
        what: "a 10,000-step turn of the instant model with a 20,000-token window, compaction on: one step's overhead around request 10,000, median (µs)",
    },
    Figure {
        section: CONTEXT,
        ours: "compaction_request_bytes_to_10000",
        peer: None,
        what: "the history a request carries, mean over every 20th of the 1,000 up to it, compaction on (bytes; must stop growing once compaction holds it)",
    },
    Figure {
        section: CONTEXT,
        ours: "uncompacted_request_bytes_to_10000",
        peer: None,
        what: "the same requests with compaction off (bytes)",
    },
    Figure {
        section: MCP,
        ours: "mcp_step_direct_noop",
        peer: None,
        what: "one step of a 20-step headless task whose every step calls the in-process no-op tool, median (µs)",
    },
    Figure {
        section: MCP,
        ours: "mcp_step_stdio_echo",
        peer: None,
        what: "the same step calling server-everything's `echo` over stdio (the server confined by the sandbox, started once) (µs)",
    },
    Figure {
        section: MCP,
        ours: "mcp_call_overhead_stdio",
        peer: None,
        what: "what one MCP call over stdio costs against a direct tool call: the two steps' difference, the reference server's own work included (µs)",
    },
    Figure {
        section: SUBAGENTS,
        ours: "subagents_one_child_wall",
        peer: None,
        what: "one waited-for `subagent` call of the instant model: from the call to its result (the child's session, agent, turn and model call), median (µs)",
    },
    Figure {
        section: SUBAGENTS,
        ours: "subagents_ten_children_wall",
        peer: None,
        what: "ten such calls in one step, the children running at once: from the calls to the ten results (µs)",
    },
    Figure {
        section: SUBAGENTS,
        ours: "subagents_ten_over_one",
        peer: None,
        what: "ten children's wall time over one child's (10 would be no overlap at all)",
    },
    Figure {
        section: SUBAGENTS,
        ours: "subagents_rss_per_child",
        peer: None,
        what: "the host's peak RSS with ten live children minus with one, per child (KiB)",
    },
    Figure {
        section: ARCHIVE,
        ours: "undo_step_recorded",
        peer: None,
        what: "a headless step running `bash true` under workspace-write in a workspace of 1,000 files, every call recorded for undo, median (µs)",
    },
    Figure {
        section: ARCHIVE,
        ours: "undo_step_unrecorded",
        peer: None,
        what: "the same with the `undo` row disabled, runs interleaved with the recorded ones (µs)",
    },
    Figure {
        section: ARCHIVE,
        ours: "undo_step_overhead",
        peer: None,
        what: "what recording adds to that step, each run's difference, median of the runs (%; target under 10; a negative figure is noise larger than the cost)",
    },
    Figure {
        section: ARCHIVE,
        ours: "undo_turn_of_1000_files",
        peer: None,
        what: "`/undo` of a turn whose one command wrote 1,000 files, through the client protocol: the command line sent to its outcome answered, every file gone, median of 3 (ms)",
    },
    Figure {
        section: ARCHIVE,
        ours: "archive_export_10k_2_children",
        peer: None,
        what: "`session export` of a 10,000-event session with two 1,000-event subagent children (zstd store): read, manifest, tar in zstd (ms)",
    },
    Figure {
        section: ARCHIVE,
        ours: "archive_import_10k_2_children",
        peer: None,
        what: "`session import` of that archive into empty stores: unpacked, every entry's sha256 and every log checked, staged and renamed into place (ms)",
    },
    Figure {
        section: ARCHIVE,
        ours: "archive_size_10k_2_children",
        peer: None,
        what: "that archive's size (KiB)",
    },
];

/// The rows of the ACP section: `ours` names the figure the ACP driver reports for every agent
/// (`acp.AGENT.FIGURE`); its columns are the agents, not the Cordis peer, so `peer` is unused.
pub(super) const ACP_FIGURES: &[Figure] = &[
    Figure {
        section: ACP,
        ours: "init_ms",
        peer: None,
        what: "process start to `initialize` answered (ms)",
    },
    Figure {
        section: ACP,
        ours: "ready_ms",
        peer: None,
        what: "process start to `session/new` answered: ready for a prompt (ms)",
    },
    Figure {
        section: ACP,
        ours: "first_chunk_ms",
        peer: None,
        what: "`session/prompt` sent to the first `agent_message_chunk` of the answer, a task the model answers at once (ms)",
    },
    Figure {
        section: ACP,
        ours: "step_ms",
        peer: None,
        what: "per-step overhead: a 20-step task's prompt-to-answer time minus a 1-step task's, over 19 (ms; headless: spawn to exit instead)",
    },
    Figure {
        section: ACP,
        ours: "server_step_ms",
        peer: None,
        what: "the same seen by the model: arrival of the request with 1 tool result to the one with 20, over 19 (ms)",
    },
    Figure {
        section: ACP,
        ours: "cpu_step_ms",
        peer: None,
        what: "the same in CPU time of the agent and the children it reaped, 20-step run minus 1-step run, over 19 (ms; steadier than wall time on shared cores; - for an agent that does not exit when its stdin closes: signalled, its children's time may be lost)",
    },
    Figure {
        section: ACP,
        ours: "rss_mib",
        peer: None,
        what: "peak RSS of the agent's process tree, the largest of a round's runs (MiB)",
    },
    Figure {
        section: ACP,
        ours: "permissions_per_step",
        peer: None,
        what: "`session/request_permission` per step, answered allow (each agent in its no-approval mode)",
    },
];

/// The figures the issue wants at least 100 times faster than Cordis.
pub(super) const HUNDREDFOLD: &[&str] = &[
    "emit_1_listeners",
    "emit_10_listeners",
    "emit_100_listeners",
    "serial_10_async_listeners",
    "parallel_10_async_listeners",
    "waterfall_10_async_listeners",
    "mount_100_plugins",
    "dispose_100_plugins",
    "reactive_reload_replace_provider",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_per_second_are_better_higher_and_the_rest_lower() {
        let better_higher: Vec<&str> = FIGURES
            .iter()
            .filter(|figure| figure.higher_is_better())
            .map(|figure| figure.ours)
            .collect();
        assert!(
            better_higher.contains(&"session_log_append_in_memory"),
            "{better_higher:?}"
        );
        // "100 events/s" inside the text is not its unit (frames).
        assert!(
            better_higher.iter().all(|name| !name.contains("frames")),
            "{better_higher:?}"
        );
        assert!(!better_higher.contains(&"emit_1_listeners"));
    }
}
