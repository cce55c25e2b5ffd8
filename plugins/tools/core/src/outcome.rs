//! The normalized outcome of one call, the post-execute decisions over it, and the seal that
//! runs a tool's `finalize_content` hook exactly once before the outcome becomes final.

use dsh_protocol::{ContentBlock, Message, PostDecision, ToolErrorInfo};
use serde_json::Value;

use crate::failure::ToolFailure;

/// Success or failure, with what only that side carries.
#[derive(Debug, Clone, PartialEq)]
pub enum OutcomeState {
    /// The tool's canonical value lives only during execution; the log keeps content and meta.
    Success {
        value: Value,
        concludes_turn: bool,
    },
    Failure(ToolFailure),
}

/// One call's outcome: the model-facing content, the tool-private `meta` the log keeps for
/// replayable presentation, the contexts to append after the step's results, and the state.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    content: Vec<ContentBlock>,
    meta: Option<Value>,
    additional_contexts: Vec<Message>,
    state: OutcomeState,
}

impl ToolOutcome {
    pub fn success(value: Value, content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            meta: None,
            additional_contexts: Vec::new(),
            state: OutcomeState::Success {
                value,
                concludes_turn: false,
            },
        }
    }

    /// A failure rendered the way every failure reaches the model: `Error: <message>`.
    pub fn failure(failure: ToolFailure) -> Self {
        let content = vec![ContentBlock::text(failure.model_text())];
        Self::failure_with_content(failure, content)
    }

    /// A failure whose model-facing content is not the plain message (block feedback, a
    /// tool's own error rendering).
    pub fn failure_with_content(failure: ToolFailure, content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            meta: None,
            additional_contexts: Vec::new(),
            state: OutcomeState::Failure(failure),
        }
    }

    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(meta);
        self
    }

    pub fn with_additional_contexts(mut self, contexts: Vec<Message>) -> Self {
        self.additional_contexts.extend(contexts);
        self
    }

    /// Mark a success as ending the turn once its batch is committed. A failure never
    /// concludes a turn, so this is a no-op on one.
    pub fn concluding_turn(mut self) -> Self {
        if let OutcomeState::Success { concludes_turn, .. } = &mut self.state {
            *concludes_turn = true;
        }
        self
    }

    pub fn content(&self) -> &[ContentBlock] {
        &self.content
    }

    pub fn meta(&self) -> Option<&Value> {
        self.meta.as_ref()
    }

    pub fn additional_contexts(&self) -> &[Message] {
        &self.additional_contexts
    }

    pub fn state(&self) -> &OutcomeState {
        &self.state
    }

    pub fn is_error(&self) -> bool {
        matches!(self.state, OutcomeState::Failure(_))
    }

    pub fn as_failure(&self) -> Option<&ToolFailure> {
        match &self.state {
            OutcomeState::Failure(failure) => Some(failure),
            OutcomeState::Success { .. } => None,
        }
    }

    pub fn value(&self) -> Option<&Value> {
        match &self.state {
            OutcomeState::Success { value, .. } => Some(value),
            OutcomeState::Failure(_) => None,
        }
    }

    pub fn concludes_turn(&self) -> bool {
        matches!(
            self.state,
            OutcomeState::Success {
                concludes_turn: true,
                ..
            }
        )
    }

    /// The structured error the log records, if any.
    pub fn error_info(&self) -> Option<&ToolErrorInfo> {
        self.as_failure().and_then(ToolFailure::info)
    }
}

/// Apply a post-execute decision. Total: an invalid decision becomes a failure outcome rather
/// than an error the caller could forget to handle.
///
/// `revalue` re-validates and re-renders a replacement value through the tool's output
/// contract (an `INVALID_TOOL_OUTPUT` failure when it does not fit). Contexts: an accepted
/// outcome keeps its own and appends the decision's; a block keeps only the decision's, since
/// context the tool deferred belongs to a result the model will not see.
pub fn apply_post_decision(
    outcome: ToolOutcome,
    decision: PostDecision,
    revalue: impl FnOnce(Value) -> Result<ToolOutcome, ToolFailure>,
) -> ToolOutcome {
    match decision {
        PostDecision::Other(unknown) => ToolOutcome::failure(ToolFailure::pipeline(format!(
            "tools/post-execute answered a decision this version cannot read (`{}`)",
            unknown.tag().unwrap_or("?")
        ))),
        PostDecision::Block {
            feedback,
            additional_contexts,
        } => ToolOutcome::failure_with_content(ToolFailure::blocked(&feedback), feedback)
            .with_additional_contexts(additional_contexts),
        PostDecision::Accept {
            content: Some(_),
            value: Some(_),
            ..
        } => ToolOutcome::failure(ToolFailure::pipeline(
            "tools/post-execute accept decision cannot replace both value and content",
        )),
        PostDecision::Accept {
            value: Some(value),
            additional_contexts,
            ..
        } => {
            if outcome.is_error() {
                return ToolOutcome::failure(ToolFailure::pipeline(
                    "tools/post-execute cannot replace the value of a failed result",
                ));
            }
            match revalue(value) {
                Ok(replaced) => {
                    let mut contexts = outcome.additional_contexts;
                    contexts.extend(additional_contexts);
                    ToolOutcome {
                        additional_contexts: contexts,
                        ..replaced
                    }
                }
                Err(failure) => ToolOutcome::failure(failure),
            }
        }
        PostDecision::Accept {
            content,
            additional_contexts,
            ..
        } => {
            let mut outcome = outcome.with_additional_contexts(additional_contexts);
            if let Some(content) = content {
                outcome.content = content;
            }
            outcome
        }
    }
}

/// A tool's last-mile content transform: `Some` replaces the content, `None` keeps it. It sees
/// the whole outcome but can change nothing else. Must be total.
pub type ContentFinalizer = Box<dyn FnOnce(&ToolOutcome) -> Option<Vec<ContentBlock>> + Send>;

/// Taken when a call starts (from the definition the call resolved, so a later re-registration
/// cannot swap it), consumed by the one [`finish`](Self::finish) that makes the outcome final.
/// Consuming `self` and holding an `FnOnce` make a second run of the finalizer impossible to
/// write; every path to a [`FinalOutcome`], including failures that skipped post-execute, goes
/// through here, so none can skip it.
#[must_use = "every call's outcome must be finished through its seal"]
pub struct OutcomeSeal {
    finalizer: Option<ContentFinalizer>,
}

impl OutcomeSeal {
    pub fn new(finalizer: Option<ContentFinalizer>) -> Self {
        Self { finalizer }
    }

    /// For a tool with no finalizer, or a call that resolved no tool at all.
    pub fn without_finalizer() -> Self {
        Self { finalizer: None }
    }

    pub fn finish(self, mut outcome: ToolOutcome) -> FinalOutcome {
        if let Some(content) = self.finalizer.and_then(|finalize| finalize(&outcome)) {
            outcome.content = content;
        }
        FinalOutcome { outcome }
    }
}

/// A finished, read-only outcome: the only thing a `tool/result` event is built from, so an
/// outcome that skipped its finalizer cannot reach the log.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalOutcome {
    outcome: ToolOutcome,
}

impl FinalOutcome {
    pub fn outcome(&self) -> &ToolOutcome {
        &self.outcome
    }
}

impl std::ops::Deref for FinalOutcome {
    type Target = ToolOutcome;

    fn deref(&self) -> &ToolOutcome {
        &self.outcome
    }
}
