//! Whether a shell command line only reads, for plan mode. The judgement is conservative: a
//! line runs in plan mode only when every simple command in it (split at `;`, `&&`, `||`, `|`,
//! `&` and new lines) is a program known to only read, called without the options that make
//! it write or run something else, and nothing redirects output anywhere but `/dev/null` or
//! another descriptor. Command substitution, subshells, groups, variable assignments and
//! process substitution are refused outright: what this cannot read is not read-only.

/// Programs that only read whatever their arguments (apart from the options `writes` names).
const READ_ONLY: &[&str] = &[
    "basename",
    "cat",
    "cd",
    "cmp",
    "comm",
    "cut",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "false",
    "find",
    "git",
    "grep",
    "egrep",
    "fgrep",
    "head",
    "hexdump",
    "id",
    "jq",
    "ls",
    "md5sum",
    "nl",
    "od",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "sha1sum",
    "sha256sum",
    "sort",
    "stat",
    "tail",
    "test",
    "tr",
    "tree",
    "true",
    "uname",
    "wc",
    "which",
    "whoami",
];

/// `git` subcommands that only read.
const GIT_READS: &[&str] = &[
    "blame",
    "cat-file",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "shortlog",
    "show",
    "status",
];

/// Why a command line is not read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotReadOnly(pub(crate) String);

/// `Ok` when every part of `line` only reads; `extra` names more programs taken as read-only.
pub(crate) fn check(line: &str, extra: &[String]) -> Result<(), NotReadOnly> {
    let commands = split(line)?;
    if commands.is_empty() {
        return Err(NotReadOnly("the command is empty".to_owned()));
    }
    for words in commands {
        check_command(&words, extra)?;
    }
    Ok(())
}

fn check_command(words: &[String], extra: &[String]) -> Result<(), NotReadOnly> {
    let Some(program) = words.first() else {
        return Ok(());
    };
    if program.contains('=') {
        return Err(NotReadOnly(format!(
            "`{program}` sets a variable for the command"
        )));
    }
    let known = READ_ONLY.contains(&program.as_str()) || extra.iter().any(|name| name == program);
    if !known {
        return Err(NotReadOnly(format!(
            "`{program}` is not a program known to only read"
        )));
    }
    let args = &words[1..];
    let refused = |option: &str| {
        NotReadOnly(format!(
            "`{program} {option}` can write or run other programs"
        ))
    };
    match program.as_str() {
        "find" => {
            let writes = [
                "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ];
            if let Some(arg) = args.iter().find(|arg| writes.contains(&arg.as_str())) {
                return Err(refused(arg));
            }
        }
        "git" => {
            let sub = args.iter().find(|arg| !arg.starts_with('-'));
            let reads = sub.is_some_and(|sub| GIT_READS.contains(&sub.as_str()));
            let options_first = args.first().is_some_and(|arg| arg.starts_with('-'))
                && args.first().map(String::as_str) != Some("--no-pager");
            if !reads || options_first {
                return Err(NotReadOnly(format!(
                    "`git {}` is not one of git's reading commands ({})",
                    sub.map_or("", String::as_str),
                    GIT_READS.join(", ")
                )));
            }
            if let Some(arg) = args.iter().find(|arg| arg.starts_with("--output")) {
                return Err(refused(arg));
            }
        }
        "sort" | "tree" => {
            if let Some(arg) = args
                .iter()
                .find(|arg| *arg == "-o" || arg.starts_with("--output"))
            {
                return Err(refused(arg));
            }
        }
        "rg" => {
            if let Some(arg) = args.iter().find(|arg| arg.starts_with("--pre")) {
                return Err(refused(arg));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The simple commands of `line`, each as its words with the quotes taken off.
fn split(line: &str) -> Result<Vec<Vec<String>>, NotReadOnly> {
    let chars: Vec<char> = line.chars().collect();
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        match c {
            '\'' => {
                let Some(end) = chars[index + 1..].iter().position(|&c| c == '\'') else {
                    return Err(uses("an unclosed quote"));
                };
                word.extend(&chars[index + 1..index + 1 + end]);
                in_word = true;
                index += end + 1;
            }
            '"' => {
                index = double_quoted(&chars, index + 1, &mut word)?;
                in_word = true;
            }
            '\\' => {
                if let Some(escaped) = next {
                    word.push(escaped);
                    index += 1;
                }
                in_word = true;
            }
            '`' => return Err(uses("command substitution")),
            '$' if next == Some('(') => return Err(uses("command substitution")),
            '(' | ')' | '{' | '}' => return Err(uses("a subshell or a group")),
            '<' if next == Some('(') => return Err(uses("process substitution")),
            '>' => {
                index = harmless_redirect(&chars, index + 1)?;
                // A descriptor number written before it (`2>`) belongs to the redirect.
                if word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                continue;
            }
            ';' | '|' | '&' | '\n' => {
                if next == Some('>') && c == '&' {
                    // `&>` redirects both streams: judged as `>` next round.
                    index += 1;
                    continue;
                }
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            other => {
                word.push(other);
                in_word = true;
            }
        }
        index += 1;
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        commands.push(words);
    }
    Ok(commands)
}

fn uses(what: &str) -> NotReadOnly {
    NotReadOnly(format!("it uses {what}"))
}

/// Reads a double-quoted string from `at` (after its opening quote) into `word`; answers the
/// index of its closing quote. Substitution inside it is refused like outside.
fn double_quoted(chars: &[char], mut at: usize, word: &mut String) -> Result<usize, NotReadOnly> {
    loop {
        match chars.get(at) {
            None => return Err(uses("an unclosed quote")),
            Some('"') => return Ok(at),
            Some('\\') => {
                if let Some(&escaped) = chars.get(at + 1) {
                    word.push(escaped);
                }
                at += 2;
            }
            Some('`') => return Err(uses("command substitution")),
            Some('$') if chars.get(at + 1) == Some(&'(') => {
                return Err(uses("command substitution"));
            }
            Some(&other) => {
                word.push(other);
                at += 1;
            }
        }
    }
}

/// Reads a redirect's target from `at` (after its `>`); answers the index after it when it
/// writes nothing (another descriptor, `/dev/null`).
fn harmless_redirect(chars: &[char], mut at: usize) -> Result<usize, NotReadOnly> {
    while chars.get(at) == Some(&'>') {
        at += 1;
    }
    while chars.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    let start = at;
    while chars
        .get(at)
        .is_some_and(|c| !c.is_whitespace() && !";|".contains(*c))
        && !(chars[at] == '&' && at > start)
    {
        at += 1;
    }
    let target: String = chars[start..at].iter().collect();
    match ["/dev/null", "&1", "&2"].contains(&target.as_str()) {
        true => Ok(at),
        false => Err(uses("an output redirect")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(line: &str) -> bool {
        check(line, &[]).is_ok()
    }

    #[test]
    fn reading_commands_pass() {
        for line in [
            "ls -la",
            "cat src/main.rs | head -n 20",
            "grep -rn 'fn main' src && wc -l src/*.rs",
            "git status; git log --oneline -5",
            "git --no-pager diff HEAD~1",
            "find . -name '*.rs' 2>/dev/null",
            "rg \"a > b\" src",
            "cd src && ls",
        ] {
            assert!(reads(line), "{line}: {:?}", check(line, &[]));
        }
    }

    #[test]
    fn writing_or_unknown_commands_are_refused() {
        for line in [
            "echo x > file.txt",
            "echo x >> file.txt",
            "cat a | tee b",
            "rm -rf target",
            "touch new",
            "find . -delete",
            "find . -exec rm {} \\;",
            "git commit -am wip",
            "git -c core.pager=x log",
            "sort -o out in",
            "ls $(rm -rf x)",
            "ls `touch y`",
            "(cd /; rm x)",
            "FOO=1 ls",
            "python3 -c 'open(\"x\",\"w\")'",
            "sed -i s/a/b/ f",
            "rg --pre ./evil x",
            "echo 'unclosed",
            "",
        ] {
            assert!(!reads(line), "{line} was taken as read-only");
        }
    }

    #[test]
    fn a_refusal_says_why_and_extra_programs_count() {
        assert_eq!(
            check("make build", &[]),
            Err(NotReadOnly(
                "`make` is not a program known to only read".to_owned()
            ))
        );
        assert!(check("make -n", &["make".to_owned()]).is_ok());
        assert!(check("ls &>/dev/null", &[]).is_ok());
        assert!(check("ls 2>&1 | head", &[]).is_ok());
    }
}
