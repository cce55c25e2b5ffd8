//! What a terminal shows, as text: the bytes a program wrote to its terminal with the
//! carriage returns of line endings dropped, control sequences removed (colour, cursor moves,
//! bracketed paste) and operating-system commands (`ESC ] ... BEL`) kept apart as markers:
//! the shell's prompt marker and the persistent shell's end-of-command marker travel that way,
//! invisible on a real terminal. A sequence or a UTF-8 character cut between two reads waits
//! for the rest.

/// Scrollback kept per terminal (characters); older text is dropped from the front.
const SCROLLBACK_CHARS: usize = 256 * 1024;

/// The marker the shell's prompt begins with (`PS1`).
pub(crate) const PROMPT_MARKER: &str = "133;D";

#[derive(Default)]
enum Escape {
    #[default]
    None,
    /// After `ESC`.
    Start,
    /// Inside `ESC [ ...` until a final byte.
    Csi,
    /// Inside `ESC ] ...` until `BEL` or `ESC \`.
    Osc(Vec<u8>),
    /// `ESC` inside an OSC (the start of its `ESC \` ending).
    OscEnd(Vec<u8>),
}

/// The rendered output of one terminal.
#[derive(Default)]
pub(crate) struct Screen {
    escape: Escape,
    /// Text bytes not yet decoded (a UTF-8 character cut by a read).
    pending: Vec<u8>,
    /// The retained text.
    text: String,
    /// Characters in `text`.
    chars: u64,
    /// Characters dropped from the front of `text` so far.
    dropped: u64,
    /// Markers seen: (position in the whole output, payload).
    markers: Vec<(u64, String)>,
    /// Prompt markers seen so far.
    pub(crate) prompts: u64,
}

impl Screen {
    /// Everything written so far, in characters (a cursor for [`Screen::since`]).
    pub(crate) fn position(&self) -> u64 {
        self.dropped + self.chars
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match std::mem::take(&mut self.escape) {
                Escape::None => match byte {
                    0x1b => {
                        self.flush();
                        self.escape = Escape::Start;
                    }
                    b'\r' | 0x07 | 0x08 | 0x00 => {}
                    _ => self.pending.push(byte),
                },
                Escape::Start => {
                    self.escape = match byte {
                        b'[' => Escape::Csi,
                        b']' => Escape::Osc(Vec::new()),
                        _ => Escape::None,
                    }
                }
                Escape::Csi => {
                    if !(0x40..=0x7e).contains(&byte) {
                        self.escape = Escape::Csi;
                    }
                }
                Escape::Osc(mut payload) => match byte {
                    0x07 => self.marker(&payload),
                    0x1b => self.escape = Escape::OscEnd(payload),
                    _ if payload.len() < 4096 => {
                        payload.push(byte);
                        self.escape = Escape::Osc(payload);
                    }
                    _ => self.escape = Escape::Osc(payload),
                },
                Escape::OscEnd(payload) => self.marker(&payload),
            }
        }
        self.flush();
    }

    fn marker(&mut self, payload: &[u8]) {
        let payload = String::from_utf8_lossy(payload).into_owned();
        if payload == PROMPT_MARKER {
            self.prompts += 1;
        }
        let at = self.position();
        self.markers.push((at, payload));
        if self.markers.len() > 64 {
            self.markers.remove(0);
        }
    }

    /// Decodes the pending bytes up to the last whole character.
    fn flush(&mut self) {
        let whole = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let rest = self.pending.split_off(whole);
        let decoded = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        self.text.push_str(&decoded);
        self.chars += decoded.chars().count() as u64;
        let count = usize::try_from(self.chars).unwrap_or(usize::MAX);
        if count > SCROLLBACK_CHARS {
            let cut = count - SCROLLBACK_CHARS;
            let at = self
                .text
                .char_indices()
                .nth(cut)
                .map_or(self.text.len(), |(at, _)| at);
            self.text.drain(..at);
            self.dropped += cut as u64;
            self.chars -= cut as u64;
        }
    }

    /// The text written since `from` (a [`Screen::position`]), up to `to` when given;
    /// `true` when part of it was already dropped from the scrollback.
    pub(crate) fn since(&self, from: u64, to: Option<u64>) -> (String, bool) {
        let lost = from < self.dropped;
        let skip = usize::try_from(from.saturating_sub(self.dropped)).unwrap_or(usize::MAX);
        let take = to.map_or(usize::MAX, |to| {
            usize::try_from(to.saturating_sub(from.max(self.dropped))).unwrap_or(usize::MAX)
        });
        (self.text.chars().skip(skip).take(take).collect(), lost)
    }

    /// The position of the first marker at or after `from` whose payload starts with
    /// `prefix`, with the rest of its payload.
    pub(crate) fn marker_after(&self, from: u64, prefix: &str) -> Option<(u64, String)> {
        self.markers
            .iter()
            .find(|(at, payload)| *at >= from && payload.starts_with(prefix))
            .map(|(at, payload)| (*at, payload[prefix.len()..].to_owned()))
    }

    /// The retained text's lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<&str> {
        self.text.split('\n').collect()
    }
}

/// `text` cut to its last `max` bytes (on a character boundary) when longer, the cut marked
/// by `note` at the end, the whole within `max` bytes; `true` when cut.
pub(crate) fn keep_tail(text: &str, max: usize, note: &str) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let room = max.saturating_sub(note.len());
    let mut start = text.len() - room.min(text.len());
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (format!("{}{note}", &text[start..]), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_control_sequences_and_markers() {
        let mut screen = Screen::default();
        screen.push(b"\x1b]133;D\x07dsh> ls\r\n\x1b[1;31mred\x1b[0m\r\n\x1b]777;end;0\x07");
        assert_eq!(screen.since(0, None).0, "dsh> ls\nred\n");
        assert_eq!(screen.prompts, 1);
        assert_eq!(
            screen.marker_after(0, "777;end;"),
            Some((12, "0".to_owned()))
        );
    }

    #[test]
    fn a_character_and_a_sequence_cut_between_reads() {
        let mut screen = Screen::default();
        let bytes = "é\x1b]133;D\x07x".as_bytes();
        for byte in bytes {
            screen.push(std::slice::from_ref(byte));
        }
        assert_eq!(screen.since(0, None).0, "éx");
        assert_eq!(screen.prompts, 1);
    }

    #[test]
    fn the_tail_is_kept_with_the_note_inside_the_limit() {
        let (kept, cut) = keep_tail("abcdefghij", 8, "\n[cut]");
        assert!(cut);
        assert_eq!(kept, "ij\n[cut]");
        assert_eq!(
            keep_tail("short", 8, "\n[cut]"),
            ("short".to_owned(), false)
        );
    }
}
