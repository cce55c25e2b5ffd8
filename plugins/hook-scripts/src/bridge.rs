//! One row's hooks at one point: the groups of every hook file of the session whose matcher
//! selects the subject, each of their commands run in file order (serially, so each run's
//! `hook/invoked` and `hook/result` stay side by side in the log), their outputs folded into
//! the most restrictive. A failing hook never fails the point: it is an error that blocks
//! nothing, said in the host log with the command and its stderr.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::{Context, LogLevel, Service};
use dsh_protocol::{ContentBlock, Message, MessageSource, PluginSource};
use dsh_sandbox_seam::SandboxService;
use dsh_sessions_seam::{NewEventRecord, append_or_report};
use tokio::sync::watch;

use crate::config::{Format, Point};
use crate::files::{HookFiles, Tables};
use crate::output::{HookOutput, Merged, decode, merge};
use crate::payload::Payload;
use crate::record::{HookInvokedEvent, HookResultEvent, summary};
use crate::run::{Invocation, run};

/// What a row is configured with, besides its files.
pub(crate) struct Settings {
    pub(crate) default_timeout_ms: u64,
    pub(crate) stderr_summary_max_chars: usize,
    pub(crate) model: String,
    pub(crate) project_dir: Option<String>,
    pub(crate) plugin_root: Option<String>,
}

/// Where a point runs.
pub(crate) struct At<'a> {
    pub(crate) session: &'a str,
    pub(crate) cwd: &'a str,
    /// The open turn the runs are recorded in (none: not recorded).
    pub(crate) turn: Option<u64>,
}

/// A start hook's run, whose contexts a session's first prompt waits for.
pub(crate) type StartRun = watch::Receiver<Option<Vec<String>>>;

/// The state of one row.
pub(crate) struct Bridge {
    pub(crate) ctx: Context,
    pub(crate) format: Format,
    pub(crate) files: Arc<HookFiles>,
    pub(crate) sandbox: Service<SandboxService>,
    pub(crate) settings: Settings,
    handlers: AtomicU64,
    /// PostToolUse contexts by (session, call id), delivered once the call's result is logged.
    pub(crate) post_contexts: Mutex<HashMap<(String, String), Vec<String>>>,
    /// The contexts of each session's SessionStart (and, for a child, SubagentStart) runs, for
    /// its first prompt.
    pub(crate) starts: Mutex<HashMap<String, Vec<StartRun>>>,
    /// The turns a Stop hook kept going, by (session, turn).
    pub(crate) continued: Mutex<HashSet<(String, u64)>>,
}

impl Bridge {
    pub(crate) fn new(
        ctx: Context,
        format: Format,
        files: Arc<HookFiles>,
        sandbox: Service<SandboxService>,
        settings: Settings,
    ) -> Self {
        Self {
            ctx,
            format,
            files,
            sandbox,
            settings,
            handlers: AtomicU64::new(0),
            post_contexts: Mutex::default(),
            starts: Mutex::default(),
            continued: Mutex::default(),
        }
    }

    pub(crate) fn warn(&self, message: &str) {
        self.ctx.log(
            LogLevel::Warn,
            &format!("hook-scripts ({}): {message}", self.ctx.row_id()),
        );
    }

    /// The hook files of a session in `cwd`.
    pub(crate) fn tables(&self, cwd: &str) -> Arc<Tables> {
        self.files.tables(cwd, &|problem| self.warn(&problem))
    }

    /// Whether any hook file of a session in `cwd` has hooks for `point`.
    pub(crate) fn has(&self, point: Point, cwd: &str) -> bool {
        self.tables(cwd).has(point)
    }

    /// Runs every hook of `point` in `tables` that selects `subject` (matcherless points pass
    /// `""`).
    pub(crate) async fn run_point(
        &self,
        point: Point,
        subject: &str,
        at: At<'_>,
        tables: &Tables,
        payload: &Payload<'_>,
    ) -> Merged {
        let stdin = payload.encode(self.format);
        let mut outputs = Vec::new();
        for table in tables.readable() {
            let groups = table.groups.iter().filter(|(p, _)| *p == point);
            for (_, group) in groups.filter(|(_, group)| group.matcher.selects(subject)) {
                for hook in &group.hooks {
                    let n = self.handlers.fetch_add(1, Ordering::Relaxed) + 1;
                    let handler = format!("{}:{}:{n}", self.format.as_str(), point.name());
                    if let Some(turn) = at.turn {
                        let invoked = HookInvokedEvent {
                            turn,
                            point: point.name().to_owned(),
                            dialect: self.format.as_str().to_owned(),
                            handler_id: handler.clone(),
                            matcher: group.pattern.clone(),
                        };
                        self.record(at.session, NewEventRecord::of(&invoked)).await;
                    }
                    let ran = run(
                        &self.ctx,
                        &self.sandbox,
                        Invocation {
                            session: at.session,
                            cwd: at.cwd,
                            command: &self.command(&hook.command),
                            stdin: stdin.clone(),
                            env: self.env(at.cwd),
                            timeout_ms: hook.timeout_ms.unwrap_or(self.settings.default_timeout_ms),
                        },
                    )
                    .await;
                    let mut output = decode(ran.exit_code, &ran.stdout, &ran.stderr, point.name());
                    self.plain_stdout_as_context(point, &mut output);
                    self.explain(point, &hook.command, &output);
                    if let Some(turn) = at.turn {
                        let result = HookResultEvent::of(
                            (turn, point.name(), &handler),
                            &output,
                            self.settings.stderr_summary_max_chars,
                            ran.duration_ms,
                        );
                        self.record(at.session, NewEventRecord::of(&result)).await;
                    }
                    outputs.push(output);
                }
            }
        }
        merge(&outputs)
    }

    async fn record(&self, session: &str, record: NewEventRecord) {
        append_or_report(&self.ctx, "hook-scripts", session, record).await;
    }

    /// Claude Code's `${CLAUDE_PLUGIN_ROOT}` and a configured `${CLAUDE_PROJECT_DIR}` are
    /// replaced in the command text (the project directory is also in the environment).
    fn command(&self, command: &str) -> String {
        let mut command = command.to_owned();
        if self.format == Format::ClaudeCode {
            if let Some(root) = &self.settings.plugin_root {
                command = command.replace("${CLAUDE_PLUGIN_ROOT}", root);
            }
            if let Some(dir) = &self.settings.project_dir {
                command = command.replace("${CLAUDE_PROJECT_DIR}", dir);
            }
        }
        command
    }

    fn env(&self, cwd: &str) -> Vec<(String, String)> {
        match self.format {
            Format::ClaudeCode => {
                let dir = self.settings.project_dir.as_deref().unwrap_or(cwd);
                vec![("CLAUDE_PROJECT_DIR".to_owned(), dir.to_owned())]
            }
            Format::Codex => Vec::new(),
        }
    }

    /// Codex takes a clean exit's plain stdout as context at the start of a session and of a
    /// prompt (JSON it did not read never leaks in as prose).
    fn plain_stdout_as_context(&self, point: Point, output: &mut HookOutput) {
        let takes = self.format == Format::Codex
            && matches!(point, Point::SessionStart | Point::UserPromptSubmit);
        if takes
            && output.exit_code == Some(0)
            && output.additional_context.is_none()
            && !output.stdout.is_empty()
            && !output.stdout.starts_with('{')
        {
            output.additional_context = Some(output.stdout.clone());
        }
    }

    /// The host log hears about a hook that failed and about what it asked for that is not
    /// applied.
    fn explain(&self, point: Point, command: &str, output: &HookOutput) {
        let max = self.settings.stderr_summary_max_chars;
        let stderr = summary(&output.stderr, max).unwrap_or_default();
        match output.exit_code {
            Some(0) | Some(2) => {}
            Some(code) => self.warn(&format!(
                "{} hook `{command}` failed with exit code {code} (it blocks nothing): {stderr}",
                point.name()
            )),
            None => self.warn(&format!(
                "{} hook `{command}` did not finish (it blocks nothing): {stderr}",
                point.name()
            )),
        }
        if output.updated_input {
            self.warn(&format!(
                "{} hook `{command}` asked to change the tool input, which is not applied",
                point.name()
            ));
        }
        if output.system_message.is_some() {
            self.warn(&format!(
                "{} hook `{command}` printed a systemMessage, which is not shown",
                point.name()
            ));
        }
    }

    /// A user message holding `contexts`, from this row's format.
    pub(crate) fn message(&self, contexts: &[String]) -> Message {
        let source = MessageSource::Plugin(PluginSource {
            plugin: Some(self.format.source_name().to_owned()),
            ..PluginSource::default()
        });
        let blocks = contexts.iter().map(ContentBlock::text).collect();
        Message::user("", blocks, source)
    }
}
