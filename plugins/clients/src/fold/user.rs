//! The `user/message` events a chat shows: a person's messages, and a line for each goal round.

use dsh_client_protocol::ChatItem;
use dsh_protocol::MessageSource;

use super::{Change, Fold};

impl Fold {
    /// A person's message as theirs; a goal round as a line saying why the agent goes on (its
    /// prompt is the model's instruction, not the person's); other injected context not at all.
    pub(super) fn user_message(
        &mut self,
        seq: u64,
        message: dsh_protocol::Message,
        change: &mut Change,
    ) {
        let item = match &message.source {
            MessageSource::User { .. } => {
                let images = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        dsh_protocol::ContentBlock::Image { attachment } => {
                            Some(attachment.clone())
                        }
                        _ => None,
                    })
                    .collect();
                ChatItem::User {
                    id: match message.id.is_empty() {
                        true => format!("user-{seq}"),
                        false => message.id.clone(),
                    },
                    seq,
                    text: message.text(),
                    images,
                }
            }
            _ => match dsh_protocol::GoalRoundSource::of(&message) {
                Some(round) => ChatItem::Notice {
                    id: format!("goal-round-{seq}"),
                    seq,
                    level: dsh_client_protocol::NoticeLevel::Info,
                    text: format!("Goal round {}: working towards the goal", round.round),
                },
                None => return,
            },
        };
        self.upsert(item, change);
    }
}
