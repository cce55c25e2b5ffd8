//! The offline demo (`session.demo`): a session whose model is the recorded demo session
//! (`demo/session.jsonl`, compiled in), replayed by a `llm-replay` child row that answers only
//! requests naming the `replay` provider, so real sessions beside it are untouched. Its bash
//! call runs for real, in a directory of its own under the home.

use dsh_agents_seam::AgentsExt;
use dsh_client_protocol::Created;
use dsh_protocol::{AgentOptions, ContentBlock, Message, MessageSource};

use crate::api::{Api, Failure};

const DEMO_LOG: &str = include_str!("../../../demo/session.jsonl");
const DEMO_TASK: &str = "What is 6 times 7? Check it with the shell.";

impl Api {
    pub(crate) async fn demo(&self) -> Result<Created, Failure> {
        let Some(dir) = self.demo_dir.clone() else {
            return Err(Failure::internal(
                "this server has no demoDir configured, so it cannot run the offline demo",
            ));
        };
        let work = dir.join("work");
        let log = dir.join("session.jsonl");
        let prepared = {
            let (work, log) = (work.clone(), log.clone());
            self.ctx
                .blocking(move || {
                    std::fs::create_dir_all(&work)?;
                    std::fs::write(&log, DEMO_LOG)
                })
                .await
        };
        match prepared {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                return Err(Failure::internal(format!("{}: {error}", dir.display())));
            }
            Err(error) => return Err(Failure::internal(error.to_string())),
        }
        self.mount_replay(&log).await?;
        let options = AgentOptions {
            cwd: work.display().to_string(),
            resume: None,
            session_id: None,
            provider: "replay".to_owned(),
            model: "replay".to_owned(),
            scope: Vec::new(),
            ..AgentOptions::default()
        };
        let session_id = self.start(options).await?;
        let task = Message::user(
            "",
            vec![ContentBlock::text(DEMO_TASK)],
            MessageSource::user(),
        );
        self.agents()?
            .followup(&session_id, &task)
            .map_err(|error| Failure::internal(error.to_string()))?;
        Ok(Created {
            session_id,
            notes: Vec::new(),
        })
    }

    /// Mounts the replay once per life of this row.
    async fn mount_replay(&self, log: &std::path::Path) -> Result<(), Failure> {
        let mut mounted = self.demo_mounted.lock().await;
        if *mounted {
            return Ok(());
        }
        let options = dsh_llm_seam::ReplayOptions {
            provider: Some("replay"),
            repeat: true,
        };
        dsh_llm_seam::mount_replay_with(&self.ctx, log, options)
            .await
            .map_err(|error| Failure::internal(format!("the demo's replay: {error}")))?;
        *mounted = true;
        Ok(())
    }
}
