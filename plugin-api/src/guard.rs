//! Panic containment at the boundary: every piece of plugin code the host calls runs inside
//! `catch_unwind`, and a panic becomes a [`PluginError`] of kind `Panic` instead of crossing the
//! FFI edge (where abi_stable would end the process).

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Poll;

use abi_stable::std_types::{RNone, RString};

use crate::abi::{ErrorKind, PluginError};

impl PluginError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: RString::from(message.into()),
            path: RNone,
        }
    }

    /// An error returned by plugin logic.
    pub fn plugin(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Plugin, message)
    }

    pub(crate) fn from_panic(payload: &(dyn Any + Send)) -> Self {
        Self::new(
            ErrorKind::Panic,
            format!("panicked: {}", panic_message(payload)),
        )
    }
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.path.as_ref().into_option() {
            Some(path) => write!(f, "{} (at {path})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for PluginError {}

/// The text of a panic payload (`&str` or `String`; anything else is named as such).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// What a panic hook logs: where it happened and why, on one line (`panicked at FILE:LINE:
/// MESSAGE`). The host's hook and the one a plugin with a standard library of its own installs
/// both log this.
pub fn panic_report(info: &std::panic::PanicHookInfo<'_>) -> String {
    let location = info
        .location()
        .map(|at| format!(" at {}:{}", at.file(), at.line()))
        .unwrap_or_default();
    format!("panicked{location}: {}", panic_message(info.payload()))
}

/// Runs `body`, turning a panic into a `Panic` error.
pub fn contain<T>(body: impl FnOnce() -> Result<T, PluginError>) -> Result<T, PluginError> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(PluginError::from_panic(payload.as_ref())),
    }
}

/// Runs `future`, turning a panic while polling it into a `Panic` error, without a box of its
/// own: the future is pinned inside the state of the one this answers.
pub async fn catching<F: Future>(future: F) -> Result<F::Output, PluginError> {
    guarded(future, Ok).await
}

/// [`catching`] for a fallible future: a panic is one more error.
pub async fn contained<T, F>(future: F) -> Result<T, PluginError>
where
    F: Future<Output = Result<T, PluginError>>,
{
    guarded(future, |result| result).await
}

/// Polls `future` inside `catch_unwind` and maps its output with `finish`: one state machine
/// around the future, whatever shape its output has.
pub(crate) async fn guarded<F, T>(
    future: F,
    finish: impl FnOnce(F::Output) -> Result<T, PluginError>,
) -> Result<T, PluginError>
where
    F: Future,
{
    let mut future = std::pin::pin!(future);
    let mut finish = Some(finish);
    std::future::poll_fn(|cx| {
        Poll::Ready(
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(output)) => match finish.take() {
                    Some(finish) => finish(output),
                    None => Err(PluginError::new(
                        ErrorKind::Dispatch,
                        "a future was polled after it finished",
                    )),
                },
                Err(payload) => Err(PluginError::from_panic(payload.as_ref())),
            },
        )
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contain_turns_panic_into_error() {
        let result: Result<(), PluginError> = contain(|| panic!("boom"));
        let error = result.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Panic);
        assert_eq!(error.message.as_str(), "panicked: boom");
    }

    #[test]
    fn contained_future_turns_panic_into_error() {
        let fut = contained(async {
            if true {
                panic!("async boom {}", 7);
            }
            Ok::<(), PluginError>(())
        });
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut fut = Box::pin(fut);
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(Err(error)) => assert_eq!(error.message.as_str(), "panicked: async boom 7"),
            other => panic!("unexpected {:?}", other.is_ready()),
        }
    }
}
