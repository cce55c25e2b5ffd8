//! The nesting depth of a JSON text. Outside strings every bracket is structure, so counting
//! them is exact for a valid text; an invalid one only ever counts deeper than a parser would
//! get before refusing it.

/// The 1-based line where the nesting of `text` first passes `limit`, if it does.
pub(crate) fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut line = 1;
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if byte == b'\n' {
            line += 1;
        }
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_inside_strings_are_not_nesting() {
        assert_eq!(too_deep(r#"{"a": "[[[[[[", "b": "\"[[[["}"#, 1), None);
        assert_eq!(too_deep(r#"{"a": [{"b": 1}]}"#, 3), None);
        assert_eq!(too_deep(r#"{"a": [{"b": 1}]}"#, 2), Some(1));
        // A closing bracket inside a string does not undo an open one.
        assert_eq!(too_deep(r#"[["]]"], ["]"]]"#, 2), None);
        assert_eq!(too_deep(r#"[["]]", ["]"]]]"#, 2), Some(1));
        assert_eq!(too_deep(&"[".repeat(100_000), 64), Some(1));
    }
}
