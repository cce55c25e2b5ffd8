#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

/// The deepest nesting the scanner sees in `text`.
fn depth(text: &str) -> usize {
    let mut scanner = Scanner::new(text, usize::MAX);
    scanner.run();
    scanner.max
}

/// libyaml's own view: the deepest nesting over the tokens its scanner hands out (flow starts
/// and ends, block collection starts and ends), and whether it stopped with an error.
#[allow(unsafe_code, reason = "the test oracle is libyaml's C-style API")]
fn libyaml(text: &str) -> (usize, bool) {
    use std::mem::MaybeUninit;
    use unsafe_libyaml_norway::*;

    let mut parser = MaybeUninit::<yaml_parser_t>::uninit();
    let parser = parser.as_mut_ptr();
    // SAFETY: `parser` points to writable storage for a parser, initialized here before any
    // other use and deleted below; the input outlives it (it is borrowed for this function).
    unsafe {
        assert!(yaml_parser_initialize(parser).ok);
        yaml_parser_set_input_string(parser, text.as_ptr(), text.len() as u64);
    }
    let (mut flow, mut block, mut max) = (0usize, 0usize, 0usize);
    let mut failed = false;
    loop {
        let mut token = MaybeUninit::<yaml_token_t>::uninit();
        // SAFETY: the parser was initialized above; `scan` fills the token whether it
        // succeeds or not (zeroed on failure), so reading its type is sound either way.
        let (ok, kind) = unsafe {
            let ok = yaml_parser_scan(parser, token.as_mut_ptr()).ok;
            let kind = (*token.as_ptr()).type_;
            yaml_token_delete(token.as_mut_ptr());
            (ok, kind)
        };
        if !ok {
            failed = true;
            break;
        }
        match kind {
            YAML_FLOW_SEQUENCE_START_TOKEN | YAML_FLOW_MAPPING_START_TOKEN => flow += 1,
            YAML_FLOW_SEQUENCE_END_TOKEN | YAML_FLOW_MAPPING_END_TOKEN => {
                flow = flow.saturating_sub(1);
            }
            YAML_BLOCK_SEQUENCE_START_TOKEN | YAML_BLOCK_MAPPING_START_TOKEN => block += 1,
            YAML_BLOCK_END_TOKEN => block = block.saturating_sub(1),
            YAML_STREAM_END_TOKEN | YAML_NO_TOKEN => break,
            _ => {}
        }
        max = max.max(flow + block);
    }
    // SAFETY: initialized above and not used after this.
    unsafe { yaml_parser_delete(parser) };
    (max, failed)
}

/// The scanner never sees less nesting than libyaml; on a text libyaml scans to its end it
/// sees the same, or one more while a flow collection could still become a block mapping's key.
fn agrees(text: &str) {
    let ours = depth(text);
    let (theirs, failed) = libyaml(text);
    assert!(ours >= theirs, "{text:?}: ours {ours} < libyaml's {theirs}");
    if !failed {
        assert!(
            ours <= theirs + 1,
            "{text:?}: ours {ours} > libyaml's {theirs} + 1"
        );
    }
}

#[test]
fn deep_flow_collections_are_refused_at_their_line() {
    assert_eq!(too_deep(&"[".repeat(100_000), 64), Some(1));
    let patch = format!("- id: x\n  config: {}\n", "[".repeat(100_000));
    assert_eq!(too_deep(&patch, 64), Some(2));
    let lines = "[\n".repeat(100);
    assert_eq!(too_deep(&lines, 64), Some(65));
    assert_eq!(too_deep("a: {b: [c, {d: e}]}\n", 4), None);
    assert_eq!(too_deep("a: {b: [c, {d: e}]}\n", 3), Some(1));
}

#[test]
fn deep_block_nesting_counts_too() {
    let compact = format!("{}x\n", "- ".repeat(100));
    assert_eq!(too_deep(&compact, 64), Some(1));
    let indented: String = (0..100).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
    assert_eq!(too_deep(&indented, 64), Some(65));
}

#[test]
fn brackets_that_are_text_do_not_nest() {
    for text in [
        "a: '[[[[[['\n",
        "a: \"[[[[\\\"[[\"\n",
        "a: x [[[[[[\n",
        "a: b # [[[[[[\n",
        "# [[[[[[\n",
        "a: |\n  [[[[[[\n  [[[[[[\n",
        "a: >-\n   [[[[\n\n   {{{{\nb: c\n",
        "a: 'it''s [[[[['\n",
        "a: plain\n  continued [[[[[[\n",
        "- it's [[[[[\n",
    ] {
        assert!(depth(text) <= 2, "{text:?}: {}", depth(text));
        agrees(text);
    }
}

#[test]
fn what_would_hide_nesting_does_not() {
    let deep = "[".repeat(30);
    for text in [
        // A closing bracket inside a quoted scalar closes nothing.
        "[ \"]\" [ \"]\" [ \"]\" [ \"]\" [ \"]\" [".repeat(5),
        // A quote inside a plain scalar starts nothing.
        format!("a: it's\nb: {deep}\n"),
        format!("[a 'b, {deep}\n"),
        // A line less indented than a block scalar's content ends it.
        format!("- a: |\n    text\n {deep}\n"),
        format!("a: |2\n  x\n {deep}\n"),
        // A multi-line plain scalar ends where the indentation does.
        format!("a: b\n  'c\nd: {deep} '\n"),
        // `#` glued to a plain scalar is text, not a comment.
        format!("[b#c, {deep}\n"),
        // A comment needs a blank before it inside a plain scalar, not at a token.
        format!("[a,#\n{deep}\n"),
        // A document marker ends a quoted scalar.
        format!("a: 'x\n---\n{deep}\n"),
    ] {
        assert!(depth(&text) >= 30, "{text:?}: {}", depth(&text));
        agrees(&text);
    }
}

#[test]
fn the_workspace_bundles_read_as_libyaml_reads_them() {
    let bundles = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../bundles");
    let mut seen = 0;
    for entry in std::fs::read_dir(bundles).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(depth(&text) <= 12);
        agrees(&text);
        seen += 1;
    }
    assert!(seen >= 4);
}

/// A small deterministic generator (xorshift).
struct Random(u64);

impl Random {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % bound as u64).unwrap()
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// A flow node: scalars that hold brackets and quotes as text, and nested collections.
    fn flow(&mut self, depth: usize) -> String {
        const SCALARS: &[&str] = &[
            "a",
            "it's",
            "x#y",
            "a b",
            "'[{'",
            "\"]}\\\"[\"",
            "'it''s ]'",
            "!t a",
            "&n a",
            "*n",
            "\"a\n b\"",
        ];
        match self.below(if depth > 6 { 1 } else { 4 }) {
            0 => self.pick(SCALARS).to_owned(),
            1 => {
                let items: Vec<String> = (0..self.below(3)).map(|_| self.flow(depth + 1)).collect();
                format!("[{}]", items.join(self.pick(&[", ", ",", ",\n "])))
            }
            2 => format!(
                "{{k: {}, {}: v}}",
                self.flow(depth + 1),
                self.flow(depth + 1)
            ),
            _ => format!("[{}]: {}", self.flow(depth + 1), self.flow(depth + 1)),
        }
    }

    /// A block node at `indent`.
    fn block(&mut self, indent: usize, depth: usize) -> String {
        let pad = " ".repeat(indent);
        match self.below(if depth > 5 { 3 } else { 6 }) {
            0 => format!(" {}\n", self.flow(0)),
            1 => format!(" |\n{pad}  [[{{ text\n{pad}   ]] '\n"),
            2 => format!(" >-\n{pad}  a # [\n\n{pad}  {{\n"),
            3 => format!(" plain\n{pad}  'continued [[\n"),
            4 => {
                let inner = indent + 1 + self.below(3);
                let ipad = " ".repeat(inner);
                (0..1 + self.below(3))
                    .map(|_| {
                        format!(
                            "\n{ipad}k{}:{}",
                            self.below(9),
                            self.block(inner, depth + 1)
                        )
                    })
                    .collect()
            }
            _ => (0..1 + self.below(3))
                .map(|_| format!("\n{pad}-{}", self.block(indent + 2, depth + 1)))
                .collect(),
        }
    }

    /// `text` with a few characters inserted, removed or replaced.
    fn mutate(&mut self, text: &str) -> String {
        let mut chars: Vec<char> = text.chars().collect();
        let noise: Vec<char> = "[]{}'\"#:-?,|>!&* \t\na\\".chars().collect();
        for _ in 0..self.below(4) {
            let at = self.below(chars.len() + 1);
            match self.below(3) {
                0 => chars.insert(at, noise[self.below(noise.len())]),
                1 if at < chars.len() => {
                    chars.remove(at);
                }
                _ if at < chars.len() => chars[at] = noise[self.below(noise.len())],
                _ => {}
            }
        }
        chars.into_iter().collect()
    }
}

/// Random texts from YAML's syntax characters and fragments, and generated documents with a
/// few mutations, against libyaml.
#[test]
fn random_texts_agree_with_libyaml() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let chars: Vec<char> = "[]{}'\"#:-?,|>!&*%@` \t\n\ra\\.2+\u{85}".chars().collect();
    let pieces = [
        "[", "]", "{", "}", "'", "\"", "# ", "\n", "  ", "- ", ": ", ":", "a", "b c", "|", ">",
        "|2", ">-", "\\", "\\\n", ",", "? ", "!t ", "!<x[y]> ", "&a ", "*a ", "---", "...", "%Y",
        "\t", "''", " #", "x:", "\n   ", "\n ",
    ];
    let mut nested = 0;
    for round in 0..60_000 {
        let text: String = match round % 3 {
            0 => (0..random.below(48))
                .map(|_| chars[random.below(chars.len())])
                .collect(),
            1 => (0..random.below(24))
                .map(|_| random.pick(&pieces))
                .collect(),
            _ => {
                let document = format!("top:{}", random.block(0, 0));
                random.mutate(&document)
            }
        };
        agrees(&text);
        nested += usize::from(libyaml(&text).0 >= 4);
    }
    // The corpus does reach into nesting, not only into errors.
    assert!(nested > 3_000, "{nested}");
    assert_eq!(libyaml("a: [[b]]\n"), (3, false));
}

use std::path::Path;
