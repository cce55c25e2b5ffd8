//! The pipeline's cancellation signal: its own flag (fired on timeout) fused with the caller's
//! signal, so a tool body watches one signal and sees either cause.

use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::RArc;
use async_ffi::{FfiFuture, FutureExt};
use dsh_plugin_api::cancel::{Cancel, Cancel_TO, CancelBox, CancelFlag, first_of};

/// The flag of one call fused with the caller's signal.
#[derive(Clone)]
pub(crate) struct Fused {
    pub(crate) own: Arc<CancelFlag>,
    pub(crate) caller: Option<Arc<CancelBox>>,
}

impl Fused {
    pub(crate) fn new(caller: Option<Arc<CancelBox>>) -> Self {
        Self {
            own: CancelFlag::new(),
            caller,
        }
    }

    pub(crate) fn boxed(&self) -> CancelBox {
        Cancel_TO::from_ptr(RArc::new(self.clone()), TD_Opaque)
    }

    /// Whether the caller (not a timeout) cancelled.
    pub(crate) fn caller_cancelled(&self) -> bool {
        self.caller
            .as_ref()
            .is_some_and(|caller| caller.is_cancelled())
    }
}

impl Cancel for Fused {
    fn is_cancelled(&self) -> bool {
        self.own.is_fired() || self.caller_cancelled()
    }

    fn cancelled(&self) -> FfiFuture<()> {
        let own = self.own.wait();
        let caller = self.caller.as_ref().map(|caller| caller.cancelled());
        async move {
            match caller {
                Some(caller) => {
                    first_of(own, caller).await;
                }
                None => own.await,
            }
        }
        .into_ffi()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fired_flag_is_seen_by_the_fused_signal() {
        let fused = Fused::new(None);
        let signal = fused.boxed();
        assert!(!signal.is_cancelled());
        fused.own.fire();
        assert!(signal.is_cancelled());
        assert!(!fused.caller_cancelled());
    }

    #[test]
    fn the_caller_signal_cancels_the_fused_one() {
        let caller = Fused::new(None);
        let fused = Fused::new(Some(Arc::new(caller.boxed())));
        assert!(!fused.boxed().is_cancelled());
        caller.own.fire();
        assert!(fused.boxed().is_cancelled());
        assert!(fused.caller_cancelled());
    }
}
