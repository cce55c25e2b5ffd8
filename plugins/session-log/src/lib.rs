//! placeholder: being written (the event type below is fixed; see event.rs)
mod event;
pub use event::{SessionEvent, SurfaceOp};
