//! How a Code Mode sub-call is logged: `tool/code-dispatch-start` where a model's call logs
//! `tool/call`, and `tool/code-dispatch` (its content shaped by `tools/code-dispatch-log`)
//! where it logs `tool/result`. Both are log-only: the program reads the outcome from the
//! report, and only the `run_code` call's own result reaches the model.

use abi_stable::std_types::{RArc, RString};
use dsh_plugin_api::{Json, LogLevel};
use dsh_protocol::{CodeDispatchEvent, CodeDispatchStartEvent, ContentBlock};
use dsh_sessions_seam::NewEventRecord;
use dsh_tools_core::FinalOutcome;
use dsh_tools_seam::{CallView, CodeDispatchView};
use serde_json::Value;

use crate::service::Shared;

/// The start record of sub-call `view` inside the `run_code` call `parent`.
pub(crate) fn start_record(parent: &str, view: &CallView, arguments: &Value) -> NewEventRecord {
    NewEventRecord::of(&CodeDispatchStartEvent {
        root_call_id: parent.to_owned(),
        parent_call_id: parent.to_owned(),
        sub_call_id: view.call_id.to_string(),
        name: view.name.to_string(),
        arguments: arguments.clone(),
    })
}

/// The settle record of sub-call `view`, its content as `tools/code-dispatch-log` shapes it
/// (a listener that fails leaves the content as it was, and is reported).
pub(crate) async fn settled_record(
    shared: &Shared,
    parent: &str,
    view: &CallView,
    arguments: &Value,
    finished: &FinalOutcome,
) -> NewEventRecord {
    let content = finished.content().to_vec();
    let payload = CodeDispatchView {
        call: view.clone(),
        parent_call_id: RString::from(parent),
        is_error: finished.is_error(),
        content: Json::encode(&content),
    };
    let shaped = shared
        .code_dispatch_log
        .waterfall(RArc::new(payload), |payload: RArc<CodeDispatchView>| {
            let content = payload.content.clone();
            async move { Ok(content) }
        })
        .await;
    let logged: Vec<ContentBlock> = match shaped.map(|shaped| shaped.decode()) {
        Ok(Ok(shaped)) => shaped,
        Ok(Err(error)) => {
            report(shared, &format!("answered unreadable content: {error}"));
            content
        }
        Err(error) => {
            report(shared, &error.to_string());
            content
        }
    };
    NewEventRecord::of(&CodeDispatchEvent {
        root_call_id: parent.to_owned(),
        parent_call_id: parent.to_owned(),
        sub_call_id: view.call_id.to_string(),
        name: view.name.to_string(),
        arguments: arguments.clone(),
        is_error: finished.is_error(),
        content: logged,
    })
}

fn report(shared: &Shared, problem: &str) {
    shared.ctx.log(
        LogLevel::Warn,
        &format!("tools/code-dispatch-log {problem}; the sub-call is logged as it came"),
    );
}
