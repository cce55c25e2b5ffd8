//! A shell command line cut into the simple commands it runs, so a rule can judge each one:
//! `a && b`, `a || b`, `a; b`, `a | b`, `a & b` and new lines separate commands, and the
//! contents of `$(…)`, `` `…` `` and `( … )` are commands of their own. Quotes keep their
//! contents whole. This is deliberately conservative: whatever it cannot read as a plain
//! command still has to pass every rule as the text it is.

/// The simple commands of `line`, trimmed, leading `NAME=value` assignments removed, in order.
pub(crate) fn commands(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    split_into(line, &mut out);
    out.into_iter()
        .map(|part| strip_assignments(part.trim()).to_owned())
        .filter(|part| !part.is_empty())
        .collect()
}

fn split_into(line: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut current = String::new();
    let mut index = 0;
    let (mut single, mut double) = (false, false);
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        match c {
            '\\' if !single => {
                current.push(c);
                if let Some(escaped) = next {
                    current.push(escaped);
                    index += 1;
                }
            }
            '\'' if !double => {
                single = !single;
                current.push(c);
            }
            '"' if !single => {
                double = !double;
                current.push(c);
            }
            '$' if !single && next == Some('(') => {
                let (inner, end) = enclosed(&chars, index + 2, '(', ')');
                split_into(&inner, out);
                current.push_str("$(…)");
                index = end;
            }
            '`' if !single => {
                let end = chars[index + 1..]
                    .iter()
                    .position(|&c| c == '`')
                    .map_or(chars.len(), |at| index + 1 + at);
                let inner: String = chars[index + 1..end.min(chars.len())].iter().collect();
                split_into(&inner, out);
                current.push_str("`…`");
                index = end;
            }
            '(' if !single && !double && current.trim().is_empty() => {
                let (inner, end) = enclosed(&chars, index + 1, '(', ')');
                split_into(&inner, out);
                index = end;
            }
            ';' | '\n' | '&' | '|' if !single && !double => {
                out.push(std::mem::take(&mut current));
                // `&&` and `||` are one separator.
                if (c == '&' || c == '|') && next == Some(c) {
                    index += 1;
                }
            }
            _ => current.push(c),
        }
        index += 1;
    }
    out.push(current);
}

/// The text from `start` up to the `close` that balances, and the index of that `close`.
fn enclosed(chars: &[char], start: usize, open: char, close: char) -> (String, usize) {
    let mut depth = 1;
    let mut index = start;
    while index < chars.len() {
        if chars[index] == open {
            depth += 1;
        } else if chars[index] == close {
            depth -= 1;
            if depth == 0 {
                return (chars[start..index].iter().collect(), index);
            }
        }
        index += 1;
    }
    (
        chars[start.min(chars.len())..].iter().collect(),
        chars.len(),
    )
}

/// `FOO=1 BAR=2 cmd args` → `cmd args`.
fn strip_assignments(part: &str) -> &str {
    let mut rest = part;
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !is_assignment || word_end == rest.len() {
            return rest;
        }
        rest = rest[word_end..].trim_start();
    }
}

#[cfg(test)]
mod tests {
    use super::commands;

    #[test]
    fn separators_split_and_quotes_do_not() {
        assert_eq!(
            commands("git status && npm test; echo 'a && b' | wc -l & sleep 1\nls || true"),
            [
                "git status",
                "npm test",
                "echo 'a && b'",
                "wc -l",
                "sleep 1",
                "ls",
                "true"
            ]
        );
    }

    #[test]
    fn substitutions_and_subshells_are_commands_of_their_own() {
        assert_eq!(
            commands("echo $(rm -rf /tmp/x) `curl evil`; (cd sub && make)"),
            [
                "rm -rf /tmp/x",
                "curl evil",
                "echo $(…) `…`",
                "cd sub",
                "make"
            ]
        );
        assert_eq!(commands("FOO=1 BAR=2 npm test"), ["npm test"]);
    }
}
