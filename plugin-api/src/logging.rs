//! Log forwarding: a plugin library's `tracing` macros and panic messages reach the host's log.
//!
//! Each library copy statically links its own `tracing` dispatcher and its own `std` panic hook,
//! so the host's subscriber never sees them. `init` installs, once per copy, a subscriber that
//! forwards every event to the host's [`LogSink`] and a panic hook that does the same (without
//! capturing a backtrace: each copy would otherwise build a large symbolization cache).

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
    #[allow(
        clippy::disallowed_methods,
        reason = "this is the SDK's own hook, installed once per library copy"
    )]
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|at| format!(" at {}:{}", at.file(), at.line()))
            .unwrap_or_default();
        let message = crate::guard::panic_message(info.payload());
        forward(
            LogLevel::Error,
            "panic",
            &format!("plugin panicked{location}: {message}"),
        );
    }));
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
