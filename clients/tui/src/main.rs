//! `dsh`: the terminal UI of the harness, a client of the client protocol and nothing more. By
//! default it starts a host of its own (`dsh-host --profile sdk` over stdio); `--attach` joins
//! a running host through its socket, so a browser and a terminal share one live session;
//! `-p TASK` runs one turn and prints the answer.
//!
//! The structure follows codex-rs's `tui`: one app loop over one event channel fed by the
//! terminal's events, the host's frames and answers and signals ([`app`]); the conversation as
//! history cells printed into the terminal's own scrollback once they are settled
//! ([`transcript`], [`cells`], [`markdown`]); an inline viewport below it with the live part,
//! the modals, the pickers, the composer and the status line ([`screen`], [`view`]); one frame
//! requester. The terminal is restored on exit, on a panic and on SIGTERM/SIGHUP/SIGINT
//! ([`term`]); a host that dies is reported in the UI, and Ctrl-R starts a new one.
#![allow(
    clippy::disallowed_methods,
    reason = "a program of its own, not a plugin: its threads, sleeps and panic hook are its own"
)]

mod answering;
mod app;
mod app_event;
mod app_host;
mod app_keys;
mod app_queue;
mod args;
mod cells;
mod composer;
mod conn;
mod highlight;
mod markdown;
mod modal;
mod oneshot;
mod plan_review;
mod popup;
mod question;
mod screen;
mod status;
mod term;
mod theme;
mod transcript;
mod view;
mod wrap;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::mpsc::{Sender, channel};

use clap::Parser;

use crate::app::App;
use crate::app_event::AppEvent;
use crate::args::Args;
use crate::conn::Transport;
use crate::screen::Screen;

fn main() -> ExitCode {
    let args = Args::parse();
    theme::init(args.no_color);
    let transport = match args.attach_path() {
        Some(path) => Transport::attach(path),
        None => Transport::child(args.host_args.clone()),
    };
    let transport = match transport {
        Ok(transport) => transport,
        Err(error) => return fail(&error.to_string()),
    };
    if let Some(task) = &args.print {
        return match oneshot::run(&transport, task, &args.start(), args.new_session()) {
            Ok(code) => exit(code),
            Err(error) => fail(&error.to_string()),
        };
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return fail("dsh needs a terminal (for a run without one: dsh -p \"TASK\")");
    }
    match interactive(args, transport) {
        Ok(code) => exit(code),
        Err(error) => {
            term::restore();
            fail(&format!("the terminal failed: {error}"))
        }
    }
}

fn fail(message: &str) -> ExitCode {
    // Not `eprintln!`: when the terminal hung up, stderr is that terminal too, and a failed
    // write there would turn a clean exit into a panic.
    let _ = writeln!(std::io::stderr(), "dsh: {message}");
    ExitCode::from(1)
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn interactive(args: Args, transport: Transport) -> std::io::Result<i32> {
    // The terminal is asked (cursor row, keyboard protocol) before the input thread starts
    // reading, so the answers are not taken for keys.
    term::enter()?;
    let (width, height) = crossterm::terminal::size()?;
    let row = crossterm::cursor::position().map_or(height.saturating_sub(1), |(_, row)| row);
    let screen = Screen::new(Box::new(std::io::stdout()), width, height, row);
    let (tx, rx) = channel();
    read_terminal(tx.clone());
    watch_hang_up(tx.clone());
    watch_signals(tx.clone());
    let app = App::new(transport, tx, screen, args.start(), args.new_session());
    let code = app.run(&rx);
    term::restore();
    code
}

/// The terminal's events, on the app's channel.
fn read_terminal(tx: Sender<AppEvent>) {
    std::thread::spawn(move || {
        while let Ok(event) = crossterm::event::read() {
            if tx.send(AppEvent::Term(event)).is_err() {
                return;
            }
        }
        let _ = tx.send(AppEvent::Signal(signal_hook::consts::SIGHUP));
    });
}

/// A terminal that hung up ends the app as the hang-up signal does. The signal does not always
/// come (a wrapper that takes it, a tracer), and crossterm reads a hung-up terminal's end of
/// input as "nothing yet", again and again at full speed, so its reader never says so. A poll
/// that asks for no event still reports a hang-up, and waits for nothing else.
fn watch_hang_up(tx: Sender<AppEvent>) {
    std::thread::spawn(move || {
        use rustix::event::{PollFd, PollFlags, poll};
        let stdin = std::io::stdin();
        loop {
            let mut fds = [PollFd::new(&stdin, PollFlags::empty())];
            match poll(&mut fds, None) {
                Ok(_) if fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR) => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                // Not a terminal that can be polled: nothing to watch.
                Err(_) => return,
            }
        }
        let _ = tx.send(AppEvent::Signal(signal_hook::consts::SIGHUP));
    });
}

/// SIGTERM, SIGHUP and SIGINT end the app as a quit does (the terminal restored first).
fn watch_signals(tx: Sender<AppEvent>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) else {
        return;
    };
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if tx.send(AppEvent::Signal(signal)).is_err() {
                break;
            }
        }
    });
}
