//! The names of the session event types: the 48 the reference declares (the core vocabulary a
//! log may hold without marking them ignorable) and the plugin types dsh itself logs. Code
//! compares an event's type against these names, never against a literal of its own, so a
//! type is spelled once.

pub const AGENT_PRESET_SELECTED: &str = "agent-preset/selected";
pub const AGENT_INBOX_SPLICED: &str = "agent/inbox/spliced";
pub const APPROVAL_ASKED: &str = "approval/asked";
pub const APPROVAL_DECIDED: &str = "approval/decided";
pub const APPROVAL_POLICY: &str = "approval/policy";
pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
pub const ASSISTANT_MESSAGE: &str = "assistant/message";
pub const COMMAND_DONE: &str = "command/done";
pub const COMMAND_RUN: &str = "command/run";
pub const COMPACTION_END: &str = "compaction/end";
pub const COMPACTION_PRUNE: &str = "compaction/prune";
pub const COMPACTION_START: &str = "compaction/start";
pub const COMPACTION_SUMMARY: &str = "compaction/summary";
pub const FEEDBACK_RECORD: &str = "feedback/record";
pub const GOAL_CHANGE: &str = "goal/change";
pub const HOOK_INVOKED: &str = "hook/invoked";
pub const HOOK_RESULT: &str = "hook/result";
pub const LLM_RETRY: &str = "llm/retry";
pub const LLM_RETRY_STARTED: &str = "llm/retry-started";
pub const PERMISSION_PRESET: &str = "permission/preset";
pub const PLAN_MODE: &str = "plan/mode";
pub const REQUEST_CONTEXT: &str = "request/context";
pub const REQUEST_HEADER: &str = "request/header";
pub const SANDBOX_MODE: &str = "sandbox/mode";
pub const SCHEDULE_CHANGE: &str = "schedule/change";
pub const SESSION_END_SEED: &str = "session/end-seed";
pub const SESSION_TITLE: &str = "session/title";
pub const SESSION_TITLE_LLM_REQUEST: &str = "session/title-llm-request";
pub const STEP_END: &str = "step/end";
pub const STEP_START: &str = "step/start";
pub const SUBAGENT_DESCRIPTOR: &str = "subagent/descriptor";
pub const TEAM_MEMBER: &str = "team/member";
pub const TEAM_MESSAGE_DELIVERED: &str = "team/message/delivered";
pub const TEAM_MESSAGE_QUEUED: &str = "team/message/queued";
pub const TEAM_TASK: &str = "team/task";
pub const TODO_WRITE: &str = "todo/write";
pub const TOOL_WORKFLOW_AGENT_END: &str = "tool-workflow/agent-end";
pub const TOOL_WORKFLOW_AGENT_START: &str = "tool-workflow/agent-start";
pub const TOOL_WORKFLOW_RUN_END: &str = "tool-workflow/run-end";
pub const TOOL_WORKFLOW_RUN_START: &str = "tool-workflow/run-start";
pub const TOOL_CALL: &str = "tool/call";
pub const TOOL_CODE_DISPATCH: &str = "tool/code-dispatch";
pub const TOOL_CODE_DISPATCH_START: &str = "tool/code-dispatch-start";
pub const TOOL_RESULT: &str = "tool/result";
pub const TURN_END: &str = "turn/end";
pub const TURN_START: &str = "turn/start";
pub const USER_MESSAGE: &str = "user/message";
pub const WEB_DEEPSEEK_SEARCH_LLM_REQUEST: &str = "web/deepseek-search-llm-request";

/// The plugin type a question to the user is logged under (`user-questions`).
pub const QUESTION_ASKED: &str = "question/asked";
/// The plugin type its answer is logged under.
pub const QUESTION_ANSWERED: &str = "question/answered";

/// Every type the reference (release 0.1.0-rc.8) declares, sorted. A log holding any other type
/// without `ignorable: true` is refused: it was written by a newer harness or by a plugin that is
/// not loaded, and skipping a required event would rebuild a wrong session.
pub const KNOWN: [&str; 48] = [
    AGENT_PRESET_SELECTED,
    AGENT_INBOX_SPLICED,
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    APPROVAL_POLICY,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    COMMAND_DONE,
    COMMAND_RUN,
    COMPACTION_END,
    COMPACTION_PRUNE,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    FEEDBACK_RECORD,
    GOAL_CHANGE,
    HOOK_INVOKED,
    HOOK_RESULT,
    LLM_RETRY,
    LLM_RETRY_STARTED,
    PERMISSION_PRESET,
    PLAN_MODE,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    SANDBOX_MODE,
    SCHEDULE_CHANGE,
    SESSION_END_SEED,
    SESSION_TITLE,
    SESSION_TITLE_LLM_REQUEST,
    STEP_END,
    STEP_START,
    SUBAGENT_DESCRIPTOR,
    TEAM_MEMBER,
    TEAM_MESSAGE_DELIVERED,
    TEAM_MESSAGE_QUEUED,
    TEAM_TASK,
    TODO_WRITE,
    TOOL_WORKFLOW_AGENT_END,
    TOOL_WORKFLOW_AGENT_START,
    TOOL_WORKFLOW_RUN_END,
    TOOL_WORKFLOW_RUN_START,
    TOOL_CALL,
    TOOL_CODE_DISPATCH,
    TOOL_CODE_DISPATCH_START,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    WEB_DEEPSEEK_SEARCH_LLM_REQUEST,
];

/// The only types that may carry `surfaceOp`/`sourceEventSeqs`, and the only ones that project
/// into model-visible history.
pub const SURFACE: [&str; 3] = [USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT];

/// Whether `kind` is one of [`SURFACE`].
pub fn is_surface(kind: &str) -> bool {
    SURFACE.contains(&kind)
}

/// Whether `kind` is one of the 48 core types.
pub fn is_known(kind: &str) -> bool {
    KNOWN.binary_search(&kind).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_types_are_sorted_unique_and_include_the_surface() {
        assert!(KNOWN.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(SURFACE.iter().all(|kind| is_known(kind)));
        assert!(!is_known(QUESTION_ASKED));
    }
}
