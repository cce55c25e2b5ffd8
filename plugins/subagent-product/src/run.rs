//! One run of a product: its command line and environment for this row and the parent
//! session's sandbox mode, the process started, the product's own protocol spoken, and the
//! process ended (with everything it started) whatever the run came to.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsh_plugin_api::cancel::{CancelFlag, Either, first_of};
use dsh_plugin_api::io::piped::PipedSubprocessService;
use dsh_plugin_api::{Context, LogLevel, Service};
use dsh_protocol::{SandboxMode, looks_secret};

use crate::config::{Permissions, Product, ProductConfig};
use crate::outcome::{Failure, Outcome, Stop};
use crate::wire::{Launch, Wire};
use crate::{claude, codex};

/// Sockets that act with the user's keys (a child with its own network could push with them):
/// kept from the product like the secret-looking variables, unless its row passes them on.
const AGENT_SOCKETS: [&str; 2] = ["SSH_AUTH_SOCK", "GPG_AGENT_INFO"];

/// What the child is asked to do, and where.
pub(crate) struct Task {
    pub(crate) cwd: String,
    pub(crate) prompt: String,
}

/// A row's product, ready to run.
pub(crate) struct Runner {
    pub(crate) ctx: Context,
    pub(crate) row: String,
    pub(crate) config: ProductConfig,
    pub(crate) permissions: Permissions,
    pub(crate) launcher: Service<PipedSubprocessService>,
}

impl Runner {
    pub(crate) fn product_name(&self) -> &'static str {
        match self.config.product {
            Product::Codex => codex::PRODUCT,
            Product::ClaudeCode => claude::PRODUCT,
        }
    }

    /// Runs `task` for a parent working under `parent_mode`; `stop` cancels it.
    pub(crate) async fn run(
        &self,
        task: &Task,
        parent_mode: SandboxMode,
        stop: &Arc<CancelFlag>,
    ) -> Outcome {
        let (stage, args) = match self.config.product {
            Product::Codex => ("initialize", vec!["app-server".to_owned()]),
            Product::ClaudeCode => (
                "query-start",
                claude::arguments(&self.permissions.claude(parent_mode)),
            ),
        };
        let mut all_args = self.config.args.clone();
        all_args.extend(args);
        let launch = Launch {
            program: self.config.command().to_owned(),
            args: all_args,
            cwd: task.cwd.clone(),
            env: self
                .config
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            remove_env: self.removed_env(),
        };
        let wire = match Wire::start(&self.ctx, &self.launcher, launch, self.product_name()) {
            Ok(wire) => wire,
            Err(error) => {
                self.ctx.log(
                    LogLevel::Warn,
                    &format!(
                        "row `{}`: {error} (set `command` to the product's executable)",
                        self.row
                    ),
                );
                return Outcome::failed(Failure::new(stage, "spawn-failed"), String::new());
            }
        };
        let speaking = async {
            match self.config.product {
                Product::Codex => {
                    codex::run(&wire, task, &self.permissions.codex(parent_mode), stop).await
                }
                Product::ClaudeCode => {
                    claude::run(&wire, task, &self.permissions.claude(parent_mode), stop).await
                }
            }
        };
        // A product can wait on its provider for ever (Codex retries a refused connection
        // without end): past `timeoutMs` the run is stopped as if cancelled, and fails.
        let timed_out = AtomicBool::new(false);
        let timer = async {
            self.ctx
                .sleep(Duration::from_millis(self.config.timeout_ms))
                .await;
            timed_out.store(true, Ordering::Release);
            stop.fire();
            std::future::pending::<Infallible>().await
        };
        let mut outcome = match first_of(speaking, timer).await {
            Either::Left(outcome) => outcome,
            Either::Right(never) => match never {},
        };
        if timed_out.load(Ordering::Acquire) && outcome.stop == Stop::Aborted {
            let stage = match self.config.product {
                Product::Codex => "turn",
                Product::ClaudeCode => "query-run",
            };
            outcome = Outcome::failed(Failure::new(stage, "timeout"), outcome.output);
        }
        wire.shutdown(self.config.dispose_grace_ms).await;
        outcome
    }

    /// The host's variables the product does not get: the harness's own, and every one that
    /// looks like a secret or reaches a key agent unless the row passes it on (`env`).
    fn removed_env(&self) -> Vec<String> {
        let mut removed = vec!["DSH_*".to_owned()];
        removed.extend(
            std::env::vars_os()
                .filter_map(|(name, _)| name.into_string().ok())
                .filter(|name| {
                    (looks_secret(name) || AGENT_SOCKETS.contains(&name.as_str()))
                        && !self.config.env.contains_key(name)
                }),
        );
        removed
    }
}
