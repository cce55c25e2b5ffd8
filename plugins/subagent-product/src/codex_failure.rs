//! How a Codex turn that did not complete reads: the `codexErrorInfo` variant of 0.171 as the
//! failure's category (with its HTTP status where the variant carries one); a variant this
//! client does not know reads as `unknown`, never as the product's own words.

use crate::codex_wire::{ErrorInfo, Turn};
use crate::outcome::Failure;

/// The failure category (and HTTP status) of a failed turn: the `codexErrorInfo` variant's
/// name; anything unrecognised is `unknown`.
pub(crate) fn failure_info(turn: &Turn) -> Failure {
    // The string variants of 0.171's `codexErrorInfo`.
    const NAMED: [&str; 19] = [
        "contextWindowExceeded",
        "sessionBudgetExceeded",
        "usageLimitExceeded",
        "rateLimitExceeded",
        "flexUnavailable",
        "serverOverloaded",
        "modelNotFound",
        "policyCapacityUnavailable",
        "inferenceHookDenied",
        "cyberPolicy",
        "bioPolicy",
        "misalignmentPolicyViolation",
        "tooManyDenials",
        "internalServerError",
        "unauthorized",
        "badRequest",
        "threadRollbackFailed",
        "sandboxError",
        "other",
    ];
    // The object variants that carry an HTTP status.
    const WITH_STATUS: [&str; 4] = [
        "httpConnectionFailed",
        "responseStreamConnectionFailed",
        "responseStreamDisconnected",
        "responseTooManyFailedAttempts",
    ];
    let info = turn
        .error
        .as_ref()
        .and_then(|error| error.codex_error_info.as_ref());
    match info {
        Some(ErrorInfo::Named(name)) if NAMED.contains(&name.as_str()) => {
            Failure::new("turn", name.as_str())
        }
        Some(ErrorInfo::Detailed(variants)) if variants.len() == 1 => {
            let Some((name, detail)) = variants.iter().next() else {
                return Failure::new("turn", "unknown");
            };
            if WITH_STATUS.contains(&name.as_str()) {
                let mut failure = Failure::new("turn", name.as_str());
                failure.http_status = detail.http_status_code.filter(|code| *code <= 65_535);
                return failure;
            }
            match name.as_str() {
                "activeTurnNotSteerable" => Failure::new("turn", "activeTurnNotSteerable"),
                _ => Failure::new("turn", "unknown"),
            }
        }
        _ => Failure::new("turn", "unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use serde_json::json;

    fn category(error: Value) -> (String, Option<u64>) {
        let turn: Turn =
            serde_json::from_value(json!({"id": "t", "status": "failed", "error": error}))
                .unwrap_or_else(|error| panic!("{error}"));
        let failure = failure_info(&turn);
        (failure.category, failure.http_status)
    }

    #[test]
    fn failed_turns_name_their_variant_and_status() {
        assert_eq!(
            category(
                json!({"message": "x", "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 503}}})
            ),
            ("httpConnectionFailed".to_owned(), Some(503))
        );
        assert_eq!(
            category(json!({"codexErrorInfo": "usageLimitExceeded"})).0,
            "usageLimitExceeded"
        );
        assert_eq!(
            category(json!({"codexErrorInfo": "somethingNew"})).0,
            "unknown"
        );
        assert_eq!(
            category(json!({"codexErrorInfo": {"a": {}, "b": {}}})).0,
            "unknown"
        );
        assert_eq!(
            category(json!({"codexErrorInfo": {"activeTurnNotSteerable": {"turnKind": "review"}}}))
                .0,
            "activeTurnNotSteerable"
        );
        assert_eq!(category(json!({"codexErrorInfo": null})).0, "unknown");
    }
}
