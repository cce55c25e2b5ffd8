//! Log forwarding: a plugin library's `tracing` macros and panic messages reach the host's log.
//!
//! A plugin library that links `plugin-api` statically (one built outside this workspace, with
//! cargo's defaults) carries its own `tracing` dispatcher and its own standard library, so
//! neither the host's subscriber nor its panic hook sees what happens in it: `init` installs,
//! once per copy, a subscriber that forwards every event to the host's [`LogSink`] and a panic
//! hook that does the same (without capturing a backtrace: each copy would otherwise build a
//! large symbolization cache). The workspace's own plugins share `plugin-api`, `tracing` and the
//! standard library with the host as shared libraries: their events reach the host's subscriber
//! directly (the global default is already the host's, so setting this one fails and is
//! ignored), and their panics the host's hook (a hook set from a plugin would replace the
//! host's for every thread).

use std::fmt::Write as _;
use std::sync::OnceLock;

use abi_stable::std_types::RStr;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use crate::abi::{LogLevel, LogSinkBox};

static SINK: OnceLock<LogSinkBox> = OnceLock::new();

/// Installs the forwarding subscriber and panic hook (idempotent within one library copy).
pub(crate) fn init(sink: LogSinkBox) {
    if SINK.set(sink).is_err() {
        return;
    }
    let _ = tracing::subscriber::set_global_default(Forwarder);
    if std_is_shared() {
        return;
    }
    #[allow(
        clippy::disallowed_methods,
        reason = "this is the SDK's own hook, installed once per library copy"
    )]
    std::panic::set_hook(Box::new(|info| {
        let report = crate::guard::panic_report(info);
        forward(LogLevel::Error, "panic", &format!("plugin {report}"));
    }));
}

/// Whether the standard library this copy calls lives in another shared object than this
/// copy's own code (linked with `-C prefer-dynamic`), so that its panic hook is process-wide.
fn std_is_shared() -> bool {
    let std_function = std::process::id as *const libc::c_void;
    let own_function = std_is_shared as *const libc::c_void;
    let object_of = |address: *const libc::c_void| {
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        #[allow(unsafe_code, reason = "dladdr is the loader's only answer")]
        // SAFETY: `dladdr` only reads the loader's tables for `address` and writes `info`,
        // which is valid for writes; `info` is read only after a successful call wrote it.
        unsafe {
            (libc::dladdr(address, info.as_mut_ptr()) != 0)
                .then(|| info.assume_init().dli_fbase as usize)
        }
    };
    object_of(std_function) != object_of(own_function)
}

/// Sends one record to the host, or to stderr when the library was never initialised (unit
/// tests of a plugin crate).
pub(crate) fn forward(level: LogLevel, target: &str, message: &str) {
    match SINK.get() {
        Some(sink) => sink.log(level, RStr::from_str(target), RStr::from_str(message)),
        None => eprintln!("[{level:?} {target}] {message}"),
    }
}

struct Forwarder;

impl Subscriber for Forwarder {
    fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _span: &Id, _values: &Record<'_>) {}
    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        let level = match *metadata.level() {
            Level::TRACE => LogLevel::Trace,
            Level::DEBUG => LogLevel::Debug,
            Level::INFO => LogLevel::Info,
            Level::WARN => LogLevel::Warn,
            Level::ERROR => LogLevel::Error,
        };
        let mut text = MessageText::default();
        event.record(&mut text);
        forward(level, metadata.target(), &text.0);
    }
    fn enter(&self, _span: &Id) {}
    fn exit(&self, _span: &Id) {}
}

#[derive(Default)]
struct MessageText(String);

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            self.0.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }
}
