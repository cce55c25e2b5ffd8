//! HTML to Markdown for `web_fetch`: `htmd` (html5ever's parser under a turndown-style walk)
//! with the reference's presentation, so a page reads the same as the reference gives it:
//! `#` headings, fenced code, `-` bullets, `**strong**`, `_emphasis_` and GitHub tables
//! (cells padded to three characters, a `---` rule under the heading row). Scripts, styles
//! and `noscript` are dropped whole.
//!
//! The walk recurses once per element, so a body nested deeper than [`MAX_DEPTH`] (counted
//! lexically, before parsing) is given back as its raw text rather than converted: a hostile
//! page must not exhaust the stack.

use std::rc::Rc;

use htmd::options::{BulletListMarker, CodeBlockStyle, HeadingStyle, Options};
use htmd::{Element, HtmlToMarkdown};
use markup5ever_rcdom::{Node, NodeData};

/// The deepest nesting converted.
pub(crate) const MAX_DEPTH: usize = 512;

/// Markers a table cell's text travels in from the cell to its row (control characters
/// a page's text never keeps: [`cell`] strips them from the content).
const TD: char = '\u{2}';
const TH: char = '\u{5}';
const END: char = '\u{3}';

/// The stack the conversion runs on: the walk recurses a few frames per level, and
/// [`MAX_DEPTH`] levels of an unoptimized build need more than a pool thread's 2 MiB.
const STACK: usize = 64 * 1024 * 1024;

/// [`convert`] on a scoped thread of its own with a stack for [`MAX_DEPTH`] levels (it ends
/// before this returns, so it never outlives the call or pins the library); the raw text when
/// that thread cannot be had.
pub(crate) fn convert_on_own_stack(html: String) -> String {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("web-fetch-markdown".into())
            .stack_size(STACK)
            .spawn_scoped(scope, || convert(&html))
            .ok()
            .and_then(|thread| thread.join().ok())
    })
    .unwrap_or(html)
}

/// `html` as Markdown, or as it is when it nests deeper than [`MAX_DEPTH`] or does not parse.
pub(crate) fn convert(html: &str) -> String {
    if nesting_depth(html) > MAX_DEPTH {
        return html.to_owned();
    }
    let converter = HtmlToMarkdown::builder()
        .options(Options {
            heading_style: HeadingStyle::Atx,
            code_block_style: CodeBlockStyle::Fenced,
            bullet_list_marker: BulletListMarker::Dash,
            ..Options::default()
        })
        .skip_tags(vec!["script", "style", "noscript"])
        .add_handler(vec!["em", "i"], emphasis)
        .add_handler(
            vec!["table", "thead", "tbody", "tfoot", "tr", "td", "th"],
            table_part,
        )
        .build();
    converter
        .convert(&numbered_cells(html))
        .unwrap_or_else(|_| html.to_owned())
}

/// `html` with each `td` and `th` given an attribute of its own: `htmd` merges adjacent
/// inline elements whose attributes are equal (`<b>a</b><b>b</b>` into `**ab**`), which would
/// merge a row's cells into one.
fn numbered_cells(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 16);
    let mut rest = html;
    let mut n = 0u64;
    while let Some(at) = rest.find('<') {
        let (before, tag) = rest.split_at(at);
        out.push_str(before);
        let bytes = tag.as_bytes();
        let cell = bytes.len() > 3
            && bytes[1].eq_ignore_ascii_case(&b't')
            && (bytes[2].eq_ignore_ascii_case(&b'd') || bytes[2].eq_ignore_ascii_case(&b'h'))
            && (bytes[3].is_ascii_whitespace() || bytes[3] == b'>' || bytes[3] == b'/');
        if cell {
            n += 1;
            out.push_str(&tag[..3]);
            out.push_str(&format!(" data-dsh-cell=\"{n}\""));
            rest = &tag[3..];
        } else {
            out.push('<');
            rest = &tag[1..];
        }
    }
    out.push_str(rest);
    out
}

/// `_text_`, the spaces around it kept outside the markers.
fn emphasis(element: Element) -> Option<String> {
    let content = element.content;
    let inner = content.trim();
    if inner.is_empty() {
        return None;
    }
    let start = content.len() - content.trim_start().len();
    let end = content.trim_end().len();
    Some(format!("{}_{inner}_{}", &content[..start], &content[end..]))
}

/// A table's parts as GitHub's table syntax has them.
fn table_part(element: Element) -> Option<String> {
    match element.tag {
        "td" => Some(cell(&element, TD)),
        "th" => Some(cell(&element, TH)),
        "tr" => row(element),
        "table" => table(element),
        // `thead`, `tbody`, `tfoot`: their rows, one line apart.
        _ => Some(format!("\n{}", element.content.trim_matches('\n'))),
    }
}

/// A cell's text on one line, marked for its row.
fn cell(element: &Element, kind: char) -> String {
    let text: String = element
        .content
        .chars()
        .filter(|c| !matches!(*c, TD | TH | END))
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    format!("{kind}{}{END}", text.trim().replace('|', "\\|"))
}

/// The cells of a row's content: (text, is a heading cell).
fn cells(content: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(start) = rest.find([TD, TH]) {
        let heading = rest[start..].starts_with(TH);
        let after = &rest[start + 1..];
        let Some(end) = after.find(END) else { break };
        out.push((after[..end].to_owned(), heading));
        rest = &after[end + 1..];
    }
    out
}

/// One row, `| a | b |`, with the rule under it when it is the table's heading row.
fn row(element: Element) -> Option<String> {
    let cells = cells(element.content);
    if cells.is_empty() {
        return Some(element.content.to_owned());
    }
    let mut line = String::from("\n|");
    for (text, _) in &cells {
        line.push(' ');
        line.push_str(text);
        for _ in text.chars().count()..3 {
            line.push(' ');
        }
        line.push_str(" |");
    }
    let all_heading = cells.iter().all(|(_, heading)| *heading);
    if heading_row(element.node, all_heading) {
        line.push_str(&rule(cells.len()));
    }
    Some(line)
}

fn rule(columns: usize) -> String {
    format!("\n|{}", " --- |".repeat(columns))
}

/// Whether `tr` heads its table: it is in `thead`, or it is the first row of the table (or of
/// its first body) and all its cells are `th`.
fn heading_row(tr: &Rc<Node>, all_heading: bool) -> bool {
    let Some(up) = parent(tr) else {
        return false;
    };
    let first_row = first_element(&up).is_some_and(|first| Rc::ptr_eq(&first, tr));
    match tag(&up).as_deref() {
        Some("thead") => true,
        Some("table") => all_heading && first_row,
        Some("tbody") => {
            all_heading
                && first_row
                && parent(&up).is_some_and(|table| {
                    !children_tagged(&table, "thead")
                        && first_tagged(&table, "tbody").is_some_and(|body| Rc::ptr_eq(&body, &up))
                })
        }
        _ => false,
    }
}

/// The table, set apart by blank lines; a table with no heading row gets an empty one, as a
/// GitHub table needs one.
fn table(element: Element) -> Option<String> {
    let content = element.content.trim_matches('\n');
    if content.trim().is_empty() {
        return None;
    }
    let mut lines = content.lines();
    let first = lines.next().unwrap_or_default();
    let has_rule = lines.next().is_some_and(|line| line.starts_with("| ---"));
    if has_rule || !first.starts_with('|') {
        return Some(format!("\n\n{content}\n\n"));
    }
    let columns = first.matches(" |").count().max(1);
    let empty = format!("|{}", "     |".repeat(columns));
    Some(format!("\n\n{empty}{}\n{content}\n\n", rule(columns)))
}

fn parent(node: &Rc<Node>) -> Option<Rc<Node>> {
    let weak = node.parent.take();
    let parent = weak.as_ref().and_then(std::rc::Weak::upgrade);
    node.parent.set(weak);
    parent
}

fn tag(node: &Rc<Node>) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

fn first_element(node: &Rc<Node>) -> Option<Rc<Node>> {
    node.children
        .borrow()
        .iter()
        .find(|child| tag(child).is_some())
        .cloned()
}

fn first_tagged(node: &Rc<Node>, name: &str) -> Option<Rc<Node>> {
    node.children
        .borrow()
        .iter()
        .find(|child| tag(child).as_deref() == Some(name))
        .cloned()
}

fn children_tagged(node: &Rc<Node>, name: &str) -> bool {
    first_tagged(node, name).is_some()
}

/// The deepest element nesting of `html`, counted from its tags without parsing (void and
/// self-closed elements do not nest).
pub(crate) fn nesting_depth(html: &str) -> usize {
    const VOID: [&str; 14] = [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr", "!doctype",
    ];
    let (mut depth, mut deepest) = (0usize, 0usize);
    let bytes = html.as_bytes();
    let mut at = 0;
    while let Some(found) = html[at..].find('<') {
        let start = at + found + 1;
        at = start;
        match bytes.get(start) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                let end = html[start..]
                    .find('>')
                    .map_or(html.len(), |end| start + end);
                let name: String = html[start..end]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '!')
                    .collect::<String>()
                    .to_ascii_lowercase();
                if !VOID.contains(&name.as_str()) && !html[start..end].ends_with('/') {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
            }
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page of the reference's recorded `web-fetch` case, and the text it recorded.
    const MENU: &str = "<!doctype html>\n<html><head><title>Menu</title><style>.x{color:red}</style><script>ignored()</script></head>\n<body>\n<h1>Caf&eacute; menu</h1>\n<p>Prices include <strong>service &amp; <em>tax</em></strong> &mdash; updated daily.</p>\n<ul><li>Espresso</li><li>Flat white</li></ul>\n<table><thead><tr><th>Drink</th><th>Price</th></tr></thead><tbody><tr><td>Espresso</td><td>&euro;2</td></tr><tr><td>Flat white</td><td>&euro;3</td></tr></tbody></table>\n<p>See <a href=\"https://fixture.invalid/specials\">today&rsquo;s specials</a>.</p>\n</body></html>\n";
    const MENU_MD: &str = "Menu\n\n# Café menu\n\nPrices include **service & _tax_** — updated daily.\n\n-   Espresso\n-   Flat white\n\n| Drink | Price |\n| --- | --- |\n| Espresso | €2  |\n| Flat white | €3  |\n\nSee [today’s specials](https://fixture.invalid/specials).";

    #[test]
    fn the_recorded_page_converts_as_the_reference_gave_it() {
        assert_eq!(convert(MENU), MENU_MD);
    }

    #[test]
    fn a_table_without_a_heading_row_gets_an_empty_one() {
        let md = convert("<table><tr><td>a</td><td>b|c</td></tr></table>");
        assert_eq!(md, "|     |     |\n| --- | --- |\n| a   | b\\|c |");
    }

    #[test]
    fn whitespace_between_cells_does_not_leak_into_rows() {
        let md = convert(
            "<table>\n <tr>\n  <th>x</th>\n  <th>y</th>\n </tr>\n <tr>\n  <td>1</td>\n  <td>2</td>\n </tr>\n</table>",
        );
        assert_eq!(md, "| x   | y   |\n| --- | --- |\n| 1   | 2   |");
    }

    #[test]
    fn the_deepest_body_converted_fits_its_stack() {
        let depth = MAX_DEPTH - 1;
        let html = format!(
            "{}deep{}",
            "<div><span>".repeat(depth / 2),
            "</span></div>".repeat(depth / 2)
        );
        assert_eq!(convert_on_own_stack(html), "deep");
    }

    #[test]
    fn a_deeply_nested_body_is_given_back_raw() {
        let html = format!("{}x{}", "<div>".repeat(600), "</div>".repeat(600));
        assert_eq!(nesting_depth(&html), 600);
        assert_eq!(convert(&html), html);
        assert_eq!(nesting_depth("<p>a<br>b<img src=x/></p>"), 1);
    }
}
