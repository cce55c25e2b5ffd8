//! The composer as a person uses it: sending, new lines, shell-like editing, the sent
//! messages under Up and Down, the word a completion replaces, and wrapping with wide
//! characters (a `TestBackend` snapshot).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(composer: &mut Composer, text: &str) {
    for c in text.chars() {
        composer.handle_key(key(KeyCode::Char(c)));
    }
}

#[test]
fn enter_sends_and_ctrl_j_or_shift_enter_start_a_line() {
    let mut composer = Composer::default();
    assert_eq!(
        composer.handle_key(key(KeyCode::Enter)),
        Edit::Ignored,
        "nothing to send"
    );
    typed(&mut composer, "first");
    composer.handle_key(ctrl('j'));
    typed(&mut composer, "second");
    composer.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    typed(&mut composer, "third");
    assert_eq!(
        composer.handle_key(key(KeyCode::Enter)),
        Edit::Submit("first\nsecond\nthird".into())
    );
}

#[test]
fn editing_keys_work_as_in_a_shell() {
    let mut composer = Composer::default();
    typed(&mut composer, "hello big world");
    composer.handle_key(ctrl('w'));
    assert_eq!(composer.text(), "hello big ");
    composer.handle_key(ctrl('a'));
    composer.handle_key(key(KeyCode::Delete));
    assert_eq!(composer.text(), "ello big ");
    composer.handle_key(ctrl('e'));
    composer.handle_key(key(KeyCode::Backspace));
    composer.handle_key(key(KeyCode::Left));
    typed(&mut composer, "!");
    assert_eq!(composer.text(), "ello bi!g");
    composer.handle_key(ctrl('u'));
    assert_eq!(composer.text(), "g");
}

#[test]
fn up_and_down_walk_the_sent_messages_and_keep_the_draft() {
    let mut composer = Composer::default();
    composer.remember("one");
    composer.remember("two");
    typed(&mut composer, "draft");
    composer.handle_key(key(KeyCode::Up));
    assert_eq!(composer.text(), "two");
    composer.handle_key(key(KeyCode::Up));
    assert_eq!(composer.text(), "one");
    composer.handle_key(key(KeyCode::Down));
    composer.handle_key(key(KeyCode::Down));
    assert_eq!(composer.text(), "draft");
}

#[test]
fn the_word_at_the_cursor_is_what_completes() {
    let mut composer = Composer::default();
    typed(&mut composer, "look at @src/ma");
    assert_eq!(composer.word_at_cursor(), (8, "@src/ma"));
    composer.replace_before_cursor(8, "@src/main.rs ");
    assert_eq!(composer.text(), "look at @src/main.rs ");
}

#[test]
fn long_text_wraps_and_the_cursor_follows() {
    let mut composer = Composer::default();
    typed(
        &mut composer,
        "a message long enough to wrap in a narrow box",
    );
    composer.handle_key(ctrl('j'));
    typed(&mut composer, "日本語");
    let mut terminal = Terminal::new(TestBackend::new(20, 5)).unwrap();
    let mut cursor = (0, 0);
    terminal
        .draw(|frame| cursor = composer.render(frame.area(), frame.buffer_mut()))
        .unwrap();
    assert_eq!(composer.height(20), 4);
    assert_eq!(cursor, (8, 3), "after the wide characters");
    insta::assert_snapshot!(terminal.backend());
}
