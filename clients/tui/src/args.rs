//! `dsh`'s command line.

use std::path::PathBuf;

use clap::Parser;
use dsh_client_protocol::CreateRequest;

const KEYS: &str = "Keys: Enter sends (queued while a turn runs) · Shift-Enter or Ctrl-J a new line · \
Tab steers into the running turn · Esc cancels the turn · / commands · @ files · \
Ctrl-O sessions · Ctrl-T reasoning · Shift-Tab permission preset · Ctrl-R a new host after \
one stopped · Ctrl-C twice quits";

/// dsh: the terminal UI of the DeepSeek Harness in Rust. By default it starts a host of its
/// own (`dsh-host --profile sdk`, found beside `dsh` or through DSH_HOST); `--attach` joins a
/// running host (a web host's sessions, live) through its socket under $DSH_HOME/run.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, about, after_help = KEYS)]
pub(crate) struct Args {
    /// Join a running host: the newest socket of $DSH_HOME/run, or the one at PATH.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub(crate) attach: Option<Option<PathBuf>>,
    /// Open session ID (its history, then new turns).
    #[arg(long, value_name = "ID", conflicts_with = "continue_last")]
    pub(crate) resume: Option<String>,
    /// Open the newest session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub(crate) continue_last: bool,
    /// Run TASK once, print the answer and exit (0 completed, 1 error, 3 blocked, 4 max
    /// tokens, 130 cancelled). Nothing is approved: a call that asks is refused.
    #[arg(short = 'p', long = "print", value_name = "TASK")]
    pub(crate) print: Option<String>,
    /// The model of a new session, `PROVIDER/MODEL`.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub(crate) model: Option<String>,
    /// The agent preset of a new session (standard, code, minimal, plugin-author or one of
    /// $DSH_HOME/agent-presets; default: the host's default).
    #[arg(long, value_name = "ID")]
    pub(crate) preset: Option<String>,
    /// No colours (as NO_COLOR does).
    #[arg(long)]
    pub(crate) no_color: bool,
    /// Arguments for the child host (after `dsh-host --profile sdk --`), say `--replay FILE`.
    #[arg(last = true, value_name = "HOST_ARGS")]
    pub(crate) host_args: Vec<String>,
}

impl Args {
    /// What a new session is made with (its directory filled in where it is made): the model
    /// `--model`, else the recorded log's when the child host replays one (`-- --replay FILE`
    /// answers as the `replay` provider), else the host's; the preset `--preset`.
    pub(crate) fn new_session(&self) -> CreateRequest {
        let replaying = self.attach.is_none() && self.host_args.iter().any(|arg| arg == "--replay");
        CreateRequest {
            cwd: None,
            model: self
                .model
                .clone()
                .or_else(|| replaying.then(|| "replay/replay".to_owned())),
            agent_preset: self.preset.clone(),
            ..CreateRequest::default()
        }
    }

    /// The socket path `--attach` named, `Some(None)` for the newest one.
    pub(crate) fn attach_path(&self) -> Option<Option<PathBuf>> {
        self.attach.clone()
    }
}

/// How the session is chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    New,
    Resume(String),
    Continue,
}

impl Args {
    pub(crate) fn start(&self) -> Start {
        match (&self.resume, self.continue_last) {
            (Some(id), _) => Start::Resume(id.clone()),
            (None, true) => Start::Continue,
            _ => Start::New,
        }
    }
}
