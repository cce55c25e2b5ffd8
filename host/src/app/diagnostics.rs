//! The fiber table shared by `check` and `status`: every fiber with its state, what a PENDING
//! fiber waits for and the error of a FAILED one, plus the library copies and tasks held.

use serde::{Deserialize, Serialize};

use crate::runtime::{FiberReport, FiberState, Services};

/// A snapshot of a running (or just booted) host.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    pub pid: u32,
    pub fibers: Vec<FiberRow>,
    pub disabled: Vec<String>,
    pub library_copies: usize,
    pub live_tasks: usize,
    pub listeners: usize,
}

/// One fiber, as printed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FiberRow {
    pub fiber: u64,
    pub row: String,
    pub plugin: String,
    pub state: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The services the row's plugin needs, may use and provides.
    #[serde(default)]
    pub services: Services,
}

impl From<&FiberReport> for FiberRow {
    fn from(report: &FiberReport) -> Self {
        Self {
            fiber: report.fiber,
            row: report.row.clone(),
            plugin: report.plugin.clone(),
            state: report.state.to_string(),
            waiting_for: report.waiting_for.clone(),
            error: report.error.clone(),
            services: report.services.clone(),
        }
    }
}

/// The exit code of `check`: 0 all ACTIVE, 1 any FAILED, 2 otherwise (some PENDING or stuck).
pub fn check_exit_code(reports: &[FiberReport]) -> i32 {
    if reports
        .iter()
        .any(|report| report.state == FiberState::Failed)
    {
        1
    } else if reports
        .iter()
        .all(|report| report.state == FiberState::Active)
    {
        0
    } else {
        2
    }
}

/// The table: ROW, PLUGIN, STATE, DETAIL.
pub fn render_table(snapshot: &Snapshot) -> String {
    let row_width = snapshot
        .fibers
        .iter()
        .map(|row| row.row.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let plugin_width = snapshot
        .fibers
        .iter()
        .map(|row| row.plugin.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = format!(
        "{:<row_width$}  {:<plugin_width$}  {:<9}  DETAIL\n",
        "ROW", "PLUGIN", "STATE"
    );
    for row in &snapshot.fibers {
        let detail = match (&row.error, row.waiting_for.is_empty()) {
            (Some(error), _) => error.clone(),
            (None, false) => format!("waiting for: {}", row.waiting_for.join("; ")),
            (None, true) => String::new(),
        };
        out.push_str(&format!(
            "{:<row_width$}  {:<plugin_width$}  {:<9}  {detail}",
            row.row, row.plugin, row.state
        ));
        out = out.trim_end().to_owned();
        out.push('\n');
    }
    if !snapshot.disabled.is_empty() {
        out.push_str(&format!(
            "disabled rows: {}\n",
            snapshot.disabled.join(", ")
        ));
    }
    out
}
