//! The terminal UI under a real terminal: `dsh` run in a tmux server of the test's own (its
//! socket in the test's directory, so tests never meet a person's tmux), keys sent with
//! `send-keys`, the screen and its scrollback read with `capture-pane`. Every wait is bounded;
//! a test whose machine has no tmux is skipped, saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::{TestDir, WAIT, target_debug};

/// tmux, or why the tests cannot have it.
pub fn tmux_available() -> Result<(), String> {
    match Command::new("tmux").arg("-V").output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!("`tmux -V` failed: {}", output.status)),
        Err(error) => Err(format!(
            "no tmux on this machine ({error}); `cargo xtask test` installs Debian's tmux"
        )),
    }
}

/// Skips the calling test, saying why, when tmux cannot run here.
#[macro_export]
macro_rules! needs_tmux {
    ($test:literal) => {
        if let Err(reason) = $crate::tui::tmux_available() {
            $crate::skip($test, &reason);
            return;
        }
    };
}

/// The `dsh` binary the workspace built.
pub fn dsh_bin() -> PathBuf {
    let path = target_debug().join("dsh");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p dsh-tui`",
        path.display()
    );
    path
}

static PANES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One pane running a command, in a tmux server of its own.
pub struct Pane {
    socket: PathBuf,
    /// Where the command's exit line is written (`dsh exited N`).
    pub started: Instant,
}

impl Pane {
    /// Runs `program args` in a `width` x `height` pane, in `cwd`, with `envs`. When the
    /// program ends, the pane prints `[exited N]` and stays, so its last screen can be read.
    pub fn start(
        dir: &TestDir,
        cwd: &Path,
        (width, height): (u16, u16),
        program: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Self {
        // A server of its own each time: a new one on a socket path just left by a killed
        // server may find that server still exiting.
        let serial = PANES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = dir.join(&format!("tmux-{serial}.sock"));
        let mut command = Command::new("tmux");
        command
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "t"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .arg("-c")
            .arg(cwd);
        for (name, value) in envs {
            command.args(["-e", &format!("{name}={value}")]);
        }
        command
            // After the program: its exit code, and whether the terminal is back in the mode
            // a shell expects (`icanon echo`, not the raw mode's `-icanon -echo`).
            .args([
                "sh",
                "-c",
                "\"$0\" \"$@\"; echo \"[exited $?]\"; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; sleep 600",
            ])
            .arg(program)
            .args(args);
        let output = command.output().expect("tmux runs");
        assert!(output.status.success(), "tmux new-session: {output:?}");
        let pane = Self {
            socket,
            started: Instant::now(),
        };
        // The tests read the whole history, and a pane keeps it only so far.
        pane.tmux(&["set-option", "-g", "history-limit", "10000"]);
        pane
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(output.status.success(), "tmux {args:?}: {output:?}");
        output
    }

    /// The process ids of the program the pane runs (the pane's shell's child) and of its
    /// children.
    pub fn program_pids(&self) -> (i32, Vec<i32>) {
        let output = self.tmux(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
        let shell: i32 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        let program = *children_of(shell)
            .first()
            .expect("the pane runs the program");
        (program, children_of(program))
    }

    /// Types `text` as it is.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
    }

    /// Pastes `text` as a terminal does when the program asked for bracketed paste.
    pub fn paste(&self, text: &str) {
        self.tmux(&["set-buffer", "--", text]);
        self.tmux(&["paste-buffer", "-p", "-t", "t"]);
    }

    /// Sends keys by tmux's names (`Enter`, `Escape`, `C-c`, `Up`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend(keys);
        self.tmux(&args);
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// The scrollback and the screen with their colours and attributes (as escape sequences).
    pub fn everything_styled(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-e", "-t", "t", "-S", "-", "-E", "-"]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The scrollback and the screen, oldest line first.
    pub fn everything(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-t", "t", "-S", "-", "-E", "-"]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until the visible screen satisfies `done`; answers it.
    pub fn wait_screen(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.wait_for(what, WAIT, done, Self::screen)
    }

    /// Waits until the screen and scrollback satisfy `done`; answers them.
    pub fn wait_everything(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.wait_for(what, WAIT, done, Self::everything)
    }

    fn wait_for(
        &self,
        what: &str,
        within: Duration,
        done: impl Fn(&str) -> bool,
        read: fn(&Self) -> String,
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            let text = read(self);
            if done(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {what}; the pane shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Makes the window `width` x `height`.
    pub fn resize(&self, width: u16, height: u16) {
        self.tmux(&[
            "resize-window",
            "-t",
            "t",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the name may hold spaces, the last `)` ends it.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        if after
            .split_whitespace()
            .nth(1)
            .and_then(|ppid| ppid.parse().ok())
            == Some(pid)
        {
            children.push(child);
        }
    }
    children
}

/// The lines of `text` without trailing blanks, empty ones dropped.
pub fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.trim_end().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// Asserts that `wanted` occur in `text`'s lines in this order (each a part of a line).
pub fn assert_in_order(text: &str, wanted: &[&str]) {
    let all = lines(text);
    let mut from = 0;
    for want in wanted {
        match all[from..].iter().position(|line| line.contains(want)) {
            Some(at) => from += at + 1,
            None => panic!("`{want}` not found (in order) in:\n{}", all.join("\n")),
        }
    }
}
