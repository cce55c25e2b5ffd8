//! `session.rewind`: a person's "rewind to here" (or undo of the last turn) from any client.
//! The `undo` row owns the work; this runs its command line (`/rewind TURN`, `/undo`) through
//! the `commands` service, so every client, the page and `/undo` typed in a prompt take the
//! same path and the run is logged as a command.

use abi_stable::std_types::RString;
use dsh_client_protocol::{RewindRequest, RpcErrorCode};
use dsh_commands_seam::{COMMANDS_SERVICE, CommandsService};
use dsh_protocol::CommandOutcome;

use crate::api::{Api, Failure};

impl Api {
    pub(crate) async fn rewind(&self, request: RewindRequest) -> Result<CommandOutcome, Failure> {
        let agent = self.agent_of(&request.session_id).await?;
        let Ok(Some(commands)) = self.ctx.get::<CommandsService>(COMMANDS_SERVICE) else {
            return Err(Failure(
                RpcErrorCode::Internal,
                "no `commands` service is running (undo is a command)".to_owned(),
            ));
        };
        let line = match request.turn {
            Some(turn) => format!("/rewind {turn}"),
            None => "/undo".to_owned(),
        };
        commands
            .run(RString::from(agent.id.as_str()), RString::from(line))
            .await
            .decode()
            .map_err(|error| Failure::internal(format!("the command's outcome: {error}")))
    }
}
