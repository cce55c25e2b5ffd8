//! The pure logic of the tool registry and its guarded call pipeline: the enforced JSON Schema
//! subset for tool arguments, the layered registry with scoped shadowing and restrictions (one
//! view per scope feeds both the prompt's tool list and execution lookup), the deterministic
//! tool order of a request, the step's call scheduler (parallel pool, exclusive barriers, model
//! order), the pre-dispatch gates, outcome normalization with post-execute decisions and the
//! exactly-once content finalizer, the `tool/call` / `tool/result` event payloads, and shell
//! output shaping.
//!
//! It owns no plugin boundary: no service, no events, no listeners, no session, no I/O and no
//! async runtime. The `tools` plugin wraps this crate, runs the `tools/*` waterfalls, talks to
//! the approval service and appends the events this crate builds; tool plugins own their
//! bodies, renderers and error texts.
//!
//! How the pieces compose into the reference's pipeline for one call: log a `tool/call`;
//! [`parse_arguments`]; take the [`OutcomeSeal`] from the definition the call's
//! [`ToolView`] resolves (none for an unknown name); run `tools/pre-execute` and turn its
//! [`PreDecision`] into a [`Gate`] ([`Gate::resolve_ask`] for `ask`, then
//! [`Gate::then_guards`] with [`ToolRegistry::guard_denial`]); on allow, dispatch inside
//! `tools/execute`: resolve the tool again ([`ToolRegistry::lookup`], `UNKNOWN_TOOL`),
//! [`ToolSpec::validate_arguments`] (`INVALID_ARGS`, raised here, after policy, as the reference
//! does), the body, [`validate_tool_output`]; run `tools/post-execute` through
//! [`apply_post_decision`] (denials and dispatch failures reach it too, failures of the pipeline
//! itself skip it); then [`OutcomeSeal::finish`] and [`result_event`]. The calls of
//! a step go through [`run_staged`]: gates in `prepare`, the body in `dispatch`, post-execute,
//! finish and logging in `commit`; additional contexts are appended after the whole batch.

mod args;
mod events;
mod failure;
mod gates;
mod order;
mod outcome;
mod registry;
mod registry_error;
mod scheduler;
mod schema;
mod schema_check;
mod schema_value;
mod scope;
mod shell;
mod spec;
mod view;

pub use args::{parse_and_validate_arguments, parse_arguments, validate_arguments};
pub use events::{result_event, tool_result_message, tool_result_of};
pub use failure::{DenialSource, FailureKind, ToolFailure, codes};
pub use gates::{AskAnswer, Gate};
pub use order::{OrderError, TOOL_ORDER_REST, ToolOrder, compare_code_units, order_schemas};
pub use outcome::{
    ContentFinalizer, FinalOutcome, OutcomeSeal, OutcomeState, ToolOutcome, apply_post_decision,
};
pub use registry::{
    GuardCall, RUN_CODE_NAME, RegisteredTool, RegistrationId, Removed, ToolGuard, ToolRegistry,
};
pub use registry_error::RegistryError;
pub use scheduler::{
    CallStages, Concurrency, DEFAULT_MAX_PARALLEL_TOOL_CALLS, Prepared, run_calls, run_staged,
};
pub use schema::Schema;
pub use schema_check::{MAX_SCHEMA_DEPTH, SchemaError, check_object_schema, check_schema};
pub use schema_value::validate_value;
pub use scope::{Layer, Scope, ScopeKey};
pub use shell::{
    CollectedOutput, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SHELL_TIMEOUT_MS, ExitStatus,
    InvalidTimeout, MAX_SHELL_TIMEOUT_MS, ShellRun, clamp_timeout_ms, limit_reached,
    parse_exit_status, render_shell_result, tail_output,
};
pub use spec::{ConcurrencyClass, ConcurrencyClassifier, Guidance, ToolSpec};
pub use view::ToolView;

/// The output schema check for a tool's canonical value: `INVALID_TOOL_OUTPUT` naming the tool
/// and every violation (`"value.path" must be a string`), or `Ok`.
pub fn validate_tool_output(
    tool: &str,
    schema: &Schema,
    value: &serde_json::Value,
) -> Result<(), ToolFailure> {
    let violations = validate_value(schema, value, "value");
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ToolFailure::invalid_output(tool, &violations))
    }
}
