//! The bounded replacement of a spilled text: a head and a tail of it, a blank line, and the
//! notice saying how much was left out and where the whole text is. The replacement never
//! exceeds the inline budget.

/// The notice for `omitted` bytes saved at `locator`.
pub(crate) fn notice(omitted: usize, locator: &str) -> String {
    format!(
        "(Omitted {omitted} bytes. Full formatted result stored at: {locator}. Use read with offset/limit, or grep this path to search within it.)"
    )
}

/// `text` bounded to `max` bytes: head and tail (half the budget each, never splitting a
/// character), then the notice. `None` when even the notice alone does not fit: the caller
/// then keeps the text inline.
pub(crate) fn bound(text: &str, max: usize, locator: &str) -> Option<String> {
    // The longest notice this text can need (every byte omitted) prices the budget.
    let widest = notice(text.len(), locator);
    if widest.len() > max {
        return None;
    }
    let Some(budget) = max
        .checked_sub(widest.len() + 2)
        .filter(|budget| *budget > 0)
    else {
        return Some(widest);
    };
    let head = text.floor_char_boundary(budget / 2);
    let tail = text.ceil_char_boundary(text.len() - (budget - budget / 2));
    let preview = format!("{}{}", &text[..head], &text[tail..]);
    let omitted = text.len() - preview.len();
    Some(format!("{preview}\n\n{}", notice(omitted, locator)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replacement_keeps_head_and_tail_within_the_budget() {
        let text = format!("START-{}-END", "x".repeat(5000));
        let bounded = bound(&text, 400, "/spill/a-bash.txt").unwrap();
        assert!(bounded.len() <= 400, "{}", bounded.len());
        assert!(bounded.starts_with("START-x"));
        let (preview, notice_text) = bounded.split_once("\n\n").unwrap();
        assert!(preview.ends_with("x-END"));
        let omitted = text.len() - preview.len();
        assert_eq!(notice_text, notice(omitted, "/spill/a-bash.txt"));
    }

    #[test]
    fn a_tight_budget_gives_the_notice_alone_and_a_tighter_one_nothing() {
        let text = "y".repeat(1000);
        let only = notice(1000, "/p");
        assert_eq!(bound(&text, only.len() + 1, "/p").unwrap(), only);
        assert_eq!(bound(&text, only.len() - 1, "/p"), None);
    }

    #[test]
    fn multibyte_text_is_never_split() {
        let text = "é".repeat(3000);
        let bounded = bound(&text, 500, "/p").unwrap();
        assert!(bounded.len() <= 500);
        let preview = bounded.split_once("\n\n").unwrap().0;
        assert!(preview.chars().all(|c| c == 'é'));
    }
}
