//! How a product run ended, and the texts the parent reads of it: the final answer, or an
//! error with the run's safe diagnostic (product, stage, category, HTTP status, exit code and
//! signal: fixed facts, never the product's own prose) and the partial answer it had given.

use crate::wire::Exit;

/// Bytes a diagnostic may take (its end is cut and marked beyond that).
const MAX_DIAGNOSTIC: usize = 4_096;

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Completed,
    Error,
    MaxTokens,
    Aborted,
}

impl Stop {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Error => "error",
            Self::MaxTokens => "max-tokens",
            Self::Aborted => "aborted",
        }
    }
}

/// The fixed facts of a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) stage: &'static str,
    pub(crate) category: String,
    pub(crate) http_status: Option<u64>,
    pub(crate) exit: Exit,
}

impl Failure {
    pub(crate) fn new(stage: &'static str, category: impl Into<String>) -> Self {
        Self {
            stage,
            category: category.into(),
            http_status: None,
            exit: Exit::default(),
        }
    }

    pub(crate) fn with_exit(mut self, exit: Exit) -> Self {
        self.exit = exit;
        self
    }

    /// `Product subagent failure (product: Codex; stage: turn; category: ...)`.
    pub(crate) fn render(&self, product: &str) -> String {
        let mut fields = vec![
            format!("product: {product}"),
            format!("stage: {}", self.stage),
            format!("category: {}", self.category),
        ];
        if let Some(status) = self.http_status {
            fields.push(format!("HTTP status: {status}"));
        }
        if let Some(code) = self.exit.code {
            fields.push(format!("exit code: {code}"));
        }
        if let Some(signal) = self.exit.signal {
            fields.push(format!("signal: {signal}"));
        }
        format!("Product subagent failure ({})", fields.join("; "))
    }
}

/// A decision taken for the product without a person, as a diagnostic's second line:
/// `Codex unattended decision (mode: never; request: command approval; decision: declined): ...`.
pub(crate) fn unattended_decision(
    product: &str,
    mode: &str,
    request: &str,
    decision: &str,
    reason: &str,
) -> String {
    format!(
        "{product} unattended decision (mode: {mode}; request: {request}; decision: {decision}): {reason}"
    )
}

/// What a run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) stop: Stop,
    /// The final answer (completed), or the best answer seen before it stopped.
    pub(crate) output: String,
    pub(crate) failure: Option<Failure>,
    /// The latest decision taken for the product without a person (a denied permission).
    pub(crate) unattended: Option<String>,
}

impl Outcome {
    pub(crate) fn completed(output: String) -> Self {
        Self {
            stop: Stop::Completed,
            output,
            failure: None,
            unattended: None,
        }
    }

    pub(crate) fn failed(failure: Failure, output: String) -> Self {
        Self {
            stop: Stop::Error,
            output,
            failure: Some(failure),
            unattended: None,
        }
    }

    /// The diagnostic of a failed run: the failure line, then the unattended decision.
    pub(crate) fn diagnostic(&self, product: &str) -> Option<String> {
        if self.stop != Stop::Error {
            return None;
        }
        let lines: Vec<String> = self
            .failure
            .iter()
            .map(|failure| failure.render(product))
            .chain(self.unattended.clone())
            .collect();
        (!lines.is_empty()).then(|| bounded(lines.join("\n")))
    }

    /// The parent's tool error for a run that did not complete.
    pub(crate) fn error_text(&self, product: &str) -> String {
        let headline = match self.stop {
            Stop::Completed | Stop::Error => "subagent run failed",
            Stop::MaxTokens => "subagent run hit its token limit before finishing",
            Stop::Aborted => "subagent run was cancelled",
        };
        let mut text = headline.to_owned();
        if let Some(diagnostic) = self.diagnostic(product) {
            text.push_str("\nDiagnostic: ");
            text.push_str(&diagnostic);
        }
        if !self.output.is_empty() {
            text.push_str("\nPartial output before the run ended:\n");
            text.push_str(&self.output);
        }
        text
    }

    /// A background job's detail: `error; diagnostic: ...`.
    pub(crate) fn job_detail(&self, product: &str) -> String {
        match self.diagnostic(product) {
            Some(diagnostic) => format!("{}; diagnostic: {diagnostic}", self.stop.word()),
            None => self.stop.word().to_owned(),
        }
    }
}

fn bounded(mut text: String) -> String {
    const MARK: &str = "\n[diagnostic truncated]";
    if text.len() <= MAX_DIAGNOSTIC {
        return text;
    }
    let mut cut = MAX_DIAGNOSTIC - MARK.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(MARK);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_its_facts_in_the_reference_order() {
        let mut failure = Failure::new("turn", "httpConnectionFailed");
        failure.http_status = Some(503);
        assert_eq!(
            failure.render("Codex"),
            "Product subagent failure (product: Codex; stage: turn; category: httpConnectionFailed; HTTP status: 503)"
        );
        let exited = Failure::new("process", "process-exit").with_exit(Exit {
            code: Some(3),
            signal: None,
        });
        assert_eq!(
            exited.render("Claude Code"),
            "Product subagent failure (product: Claude Code; stage: process; category: process-exit; exit code: 3)"
        );
    }

    #[test]
    fn the_error_text_keeps_diagnostic_and_partial_apart() {
        let outcome = Outcome::failed(
            Failure::new("query-run", "error_max_budget_usd"),
            "partial assistant text".to_owned(),
        );
        assert_eq!(
            outcome.error_text("Claude Code"),
            "subagent run failed\nDiagnostic: Product subagent failure (product: Claude Code; stage: query-run; category: error_max_budget_usd)\nPartial output before the run ended:\npartial assistant text"
        );
        assert_eq!(
            outcome.job_detail("Claude Code"),
            "error; diagnostic: Product subagent failure (product: Claude Code; stage: query-run; category: error_max_budget_usd)"
        );
        let long = Outcome {
            unattended: Some("x".repeat(5_000)),
            ..outcome
        };
        let diagnostic = long.diagnostic("Claude Code").unwrap_or_default();
        assert!(
            diagnostic.len() <= MAX_DIAGNOSTIC && diagnostic.ends_with("[diagnostic truncated]")
        );
    }
}
