//! Reading the generic arguments of a type in code: enough to tell `Result<T, String>` from
//! `Result<T, MyError>` without a parser. Angle brackets nest, `->` is an arrow, not a close,
//! and a comma splits arguments only outside parentheses and brackets; comments are left out.

use super::Source;

impl Source {
    /// The lines of every `NAME<..>` (or `NAME::<..>`) in code whose last generic argument,
    /// whitespace left out, is one of `errors` or a path ending in one (`std::string::String`).
    pub(in crate::lint) fn results_with_error(&self, name: &str, errors: &[&str]) -> Vec<usize> {
        (0..self.chars.len())
            .filter(|i| self.word_at(*i, name))
            .filter_map(|i| {
                let open = self.generics_open(i + name.chars().count())?;
                let last = self.last_argument(open + 1)?;
                let named = errors.iter().any(|error| {
                    last == *error || last.strip_suffix(error).is_some_and(|p| p.ends_with("::"))
                });
                named.then(|| self.line_of(i))
            })
            .collect()
    }

    /// The index of the `<` that opens the generic arguments after a name ending at `index`.
    fn generics_open(&self, index: usize) -> Option<usize> {
        let mut at = self.skip_space(index);
        if self.chars.get(at) == Some(&':') && self.chars.get(at + 1) == Some(&':') {
            at = self.skip_space(at + 2);
        }
        (self.chars.get(at) == Some(&'<') && self.code(at)).then_some(at)
    }

    /// The last of two or more top-level arguments of the generics whose contents start at
    /// `from`, code only and without whitespace (`io::Result<String>` has no error argument);
    /// `None` when there is one argument or they never close.
    fn last_argument(&self, from: usize) -> Option<String> {
        let mut angles = 1usize;
        let mut groups = 0usize;
        let mut arguments: Vec<String> = vec![String::new()];
        for i in from..self.chars.len() {
            let c = self.chars[i];
            if !self.code(i) {
                continue;
            }
            match c {
                '<' => angles += 1,
                '>' if i > 0 && self.chars[i - 1] == '-' => {}
                '>' => {
                    angles -= 1;
                    if angles == 0 {
                        // A trailing comma leaves an empty last argument.
                        if arguments.last().is_some_and(String::is_empty) {
                            arguments.pop();
                        }
                        return arguments.pop().filter(|_| !arguments.is_empty());
                    }
                }
                '(' | '[' => groups += 1,
                ')' | ']' => groups = groups.saturating_sub(1),
                ',' if angles == 1 && groups == 0 => {
                    arguments.push(String::new());
                    continue;
                }
                // A `;` or `{` cannot be inside generics: this `<` was a comparison.
                ';' | '{' => return None,
                _ => {}
            }
            if !c.is_whitespace()
                && let Some(last) = arguments.last_mut()
            {
                last.push(c);
            }
        }
        None
    }
}
