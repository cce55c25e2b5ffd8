//! The JSON Schemas of the vocabulary, in one document: what a client of the seams (the web
//! API, an SDK in another language) validates against and generates its types from.

use schemars::generate::SchemaSettings;

use crate::*;

/// A JSON Schema document whose `$defs` hold every type of the vocabulary that is sent or
/// logged on its own (the types they contain are defined beside them).
pub fn schema_document() -> serde_json::Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    macro_rules! roots {
        ($($type:ty),* $(,)?) => {
            $( generator.subschema_for::<$type>(); )*
        };
    }
    roots!(
        SessionEvent,
        Message,
        StreamChunk,
        TokenUsage,
        LlmFailure,
        GenerateRequest,
        ModelInfo,
        TurnStartEvent,
        TurnEndEvent,
        StepStartEvent,
        StepEndEvent,
        UserMessageEvent,
        AssistantChunkEvent,
        AssistantMessageEvent,
        ToolCallEvent,
        ToolResultEvent,
        RequestHeaderEvent,
        RequestContextEvent,
        InboxSplicedEvent,
        ApprovalAskedEvent,
        ApprovalDecidedEvent,
        ApprovalPolicyEvent,
        SandboxModeEvent,
        PermissionPresetEvent,
        TodoWriteEvent,
        SessionTitleEvent,
        SessionTitleLlmRequestEvent,
        EndSeedEvent,
        LlmRetryEvent,
        LlmRetryStartedEvent,
        TurnOutcome,
        StepProposal,
        PreStepDecision,
        RequestFailure,
        RequestErrorDecision,
        TurnStopping,
        Continuation,
        PromptSubmit,
        PromptDecision,
        ToolDecl,
        ToolReply,
        OutcomeSummary,
        PreDecision,
        PostDecision,
        StepReport,
        ApprovalRequest,
        ApprovalOutcome,
        AgentOptions,
        AgentSummary,
        InboxListing,
        QueueAction,
        SandboxPolicy,
        AgentNoticeData,
        PromptRequest,
        PromptSection,
        AssembledPrompt,
        SessionSummary,
        ToolView,
        SubagentDescriptorEvent,
        ChildSummary,
        SubagentNotice,
        TokenMeter,
        CompactionStartEvent,
        CompactionSummaryEvent,
        CompactionEndEvent,
        CommandRunEvent,
        CommandDoneEvent,
        QuestionRequest,
        QuestionAskedEvent,
        QuestionAnsweredEvent,
        QuestionResponse,
        JobStart,
        JobEnd,
        JobSummary,
    );
    let definitions = generator.take_definitions(true);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dsh protocol",
        "$defs": definitions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_defines_every_root_and_what_it_contains() {
        let document = schema_document();
        let defs = document["$defs"].as_object().expect("defs");
        for name in [
            "Message",
            "ContentBlock",
            "MessageSource",
            "StreamChunk",
            "TurnEndReason",
            "TurnOutcome",
            "PreDecision",
            "ToolReply",
            "FailureCode",
            "SubagentDescriptorEvent",
            "TokenMeter",
            "QuestionAskedEvent",
        ] {
            assert!(
                defs.contains_key(name),
                "{name} missing from {:?}",
                defs.keys()
            );
        }
        assert_eq!(defs["FailureCode"]["type"], "string");
    }
}
