//! How `view` shows a file: the reference's rendering, so a model tuned on it reads ours the
//! same. The text is split at every `\n` (a file ending in one has an empty last line, as the
//! reference counts it), each shown line numbered right-aligned in six columns and two spaces,
//! under a heading naming the path, the total and the range; past `MAX_CHARS` characters the
//! rest is cut and a note says how to find what was cut.

use dsh_tool_fs_core::ToolError;

/// Characters of a view kept before it is clipped (the reference's default).
pub(crate) const MAX_CHARS: usize = 16_000;

/// Appended to a clipped view (the reference's words).
const CLIPPED: &str = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>";

/// `content` of the file shown as `path`, within `range` (`[first, last]`, from 1; `last`
/// -1 for the end), or why the range does not fit it.
pub(crate) fn render(
    path: &str,
    content: &str,
    range: Option<&[i64]>,
) -> Result<String, ToolError> {
    let lines: Vec<&str> = content.split('\n').collect();
    let total = lines.len();
    let mut heading = format!(
        "Here's the content of {path} with line numbers (which has a total of {total} lines)"
    );
    let (first, shown) = match range {
        None => (1, &lines[..]),
        Some(range) => {
            let (first, last) = checked(range, total)?;
            heading.push_str(&format!(" with view_range=[{first}, {last}]"));
            let end = match last {
                -1 => total,
                last => last as usize,
            };
            (first, &lines[first - 1..end])
        }
    };
    let numbered: Vec<String> = shown
        .iter()
        .enumerate()
        .map(|(index, line)| format!("{:>6}  {line}", first + index))
        .collect();
    Ok(clip(format!("{heading}:\n{}\n", numbered.join("\n"))))
}

/// The range's first line and last (-1: the end), checked against `total` lines with the
/// reference's messages.
fn checked(range: &[i64], total: usize) -> Result<(usize, i64), ToolError> {
    let [first, last] = range else {
        return Err(ToolError::plain(
            "Invalid `view_range`. It should be a list of two integers.",
        ));
    };
    let shown = format!("[{first}, {last}]");
    let (first, last) = (*first, *last);
    if first < 1 || first > total as i64 {
        return Err(ToolError::plain(format!(
            "Invalid `view_range`: {shown}. Its first element `{first}` should be within the range of lines of the file: [1, {total}]"
        )));
    }
    if last > total as i64 {
        return Err(ToolError::plain(format!(
            "Invalid `view_range`: {shown}. Its second element `{last}` should be smaller than the number of lines in the file: `{total}`"
        )));
    }
    if last != -1 && last < first {
        return Err(ToolError::plain(format!(
            "Invalid `view_range`: {shown}. Its second element `{last}` should be larger or equal than its first `{first}`"
        )));
    }
    Ok((first as usize, last))
}

/// `text` cut to [`MAX_CHARS`] characters, with the note when it was.
fn clip(text: String) -> String {
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => format!("{}{CLIPPED}", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_numbered_as_the_reference_numbers_it() {
        assert_eq!(
            render("/w/a.txt", "target:\n\told\n", None).unwrap(),
            "Here's the content of /w/a.txt with line numbers (which has a total of 3 lines):\n     1  target:\n     2  \told\n     3  \n"
        );
        assert_eq!(
            render("/w/a.txt", "a\nb\nc", Some(&[2, -1])).unwrap(),
            "Here's the content of /w/a.txt with line numbers (which has a total of 3 lines) with view_range=[2, -1]:\n     2  b\n     3  c\n"
        );
    }

    #[test]
    fn a_range_outside_the_file_is_refused_naming_it() {
        let refused = |range: &[i64]| {
            render("/a", "a\nb", Some(range))
                .unwrap_err()
                .message()
                .to_owned()
        };
        assert!(refused(&[0, 1]).contains("first element `0`"));
        assert!(refused(&[1, 5]).contains("second element `5`"));
        assert!(refused(&[2, 1]).contains("larger or equal"));
        assert!(refused(&[1]).contains("list of two integers"));
    }

    #[test]
    fn a_long_view_is_clipped_with_the_note() {
        let long = "x".repeat(MAX_CHARS * 2);
        let shown = render("/a", &long, None).unwrap();
        assert!(shown.ends_with(CLIPPED));
        assert_eq!(shown.chars().count(), MAX_CHARS + CLIPPED.chars().count());
    }
}
