//! Markdown to HTML that a page can insert as it is.
//!
//! pulldown-cmark's HTML writer escapes every text and attribute it writes; what it passes
//! through unescaped is raw HTML and link destinations. So the sanitizing is done on the event
//! stream, before the writer: raw HTML becomes text (shown as the model wrote it), a link keeps
//! its destination only for `http`, `https`, `mailto` and in-page `#` addresses (any other is
//! shown as its text), and an image is a link to its address (never loaded: a remote image is
//! a request the model chose). That is the whole attack surface, so a general HTML sanitizer
//! (and the HTML parser it brings) would only re-check what cannot occur.

use pulldown_cmark::{Alignment, CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd, html};
use pulldown_cmark_escape::{escape_href, escape_html};

use crate::highlight::code_block;

/// The Markdown a model writes: GitHub's tables, task lists, strikethrough and alert quotes.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_GFM
}

/// Whether a link may point at `url`: the web, mail, or a place in the page.
fn allowed(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["http://", "https://", "mailto:", "#"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

/// The opening tag of a link to `url` that leaves the page without handing it a reference.
fn anchor(url: &str, title: &str, class: Option<&str>) -> String {
    let mut tag = String::from("<a href=\"");
    // Writing to a String cannot fail.
    let _ = escape_href(&mut tag, url);
    tag.push('"');
    if !title.is_empty() {
        tag.push_str(" title=\"");
        let _ = escape_html(&mut tag, title);
        tag.push('"');
    }
    if let Some(class) = class {
        tag.push_str(" class=\"");
        tag.push_str(class);
        tag.push('"');
    }
    tag.push_str(" target=\"_blank\" rel=\"noopener noreferrer\">");
    tag
}

/// Where a table being written is.
#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    head: bool,
    column: usize,
}

impl Table {
    /// The next cell's opening tag.
    fn open_cell(&mut self) -> String {
        let tag = if self.head { "th" } else { "td" };
        let class = match self.alignments.get(self.column) {
            Some(Alignment::Left) => " class=\"align-left\"",
            Some(Alignment::Center) => " class=\"align-center\"",
            Some(Alignment::Right) => " class=\"align-right\"",
            _ => "",
        };
        self.column += 1;
        format!("<{tag}{class}>")
    }
}

/// `text` as HTML. `highlight` colours fenced code by its language; the open tail of a
/// streaming answer is rendered without it, since it is rendered again on every chunk.
pub fn render(text: &str, highlight: bool) -> String {
    let mut events: Vec<Event<'_>> = Vec::new();
    // The fenced block being collected: its language and its text so far.
    let mut code: Option<(String, String)> = None;
    // Per open link or image: whether its tag was written (a refused address writes none).
    let mut links: Vec<bool> = Vec::new();
    // The open table's column alignments, whether its head is being read, the next column.
    let mut table = Table::default();
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((language, String::new()));
            }
            Event::Text(piece) if code.is_some() => {
                if let Some((_, body)) = code.as_mut() {
                    body.push_str(&piece);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                let (language, body) = code.take().unwrap_or_default();
                events.push(Event::Html(code_block(&language, &body, highlight).into()));
            }
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::HtmlBlock) => events.push(Event::Html("<p class=\"raw\">".into())),
            Event::End(TagEnd::HtmlBlock) => events.push(Event::Html("</p>".into())),
            Event::Start(Tag::Link {
                dest_url, title, ..
            }) => {
                let open = allowed(&dest_url);
                if open {
                    events.push(Event::Html(anchor(&dest_url, &title, None).into()));
                }
                links.push(open);
            }
            Event::Start(Tag::Image {
                dest_url, title, ..
            }) => {
                let open = allowed(&dest_url);
                if open {
                    let tag = anchor(&dest_url, &title, Some("image-link"));
                    events.push(Event::Html(tag.into()));
                    events.push(Event::Text(CowStr::Borrowed("🖼 ")));
                }
                links.push(open);
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if links.pop().unwrap_or(false) {
                    events.push(Event::Html("</a>".into()));
                }
            }
            // A wide table scrolls in its own box, not the page.
            Event::Start(Tag::Table(alignments)) => {
                events.push(Event::Html("<div class=\"table-wrap\">".into()));
                table = Table {
                    alignments: alignments.clone(),
                    ..Table::default()
                };
                events.push(Event::Start(Tag::Table(alignments)));
            }
            // Cells are written here: the writer's own carry an inline `style` for their
            // alignment, which the page's CSP refuses; a class does the same.
            Event::Start(Tag::TableHead) => {
                table.head = true;
                table.column = 0;
                events.push(Event::Start(Tag::TableHead));
            }
            Event::End(TagEnd::TableHead) => {
                table.head = false;
                events.push(Event::End(TagEnd::TableHead));
            }
            Event::Start(Tag::TableRow) => {
                table.column = 0;
                events.push(Event::Start(Tag::TableRow));
            }
            Event::Start(Tag::TableCell) => {
                events.push(Event::Html(table.open_cell().into()));
            }
            Event::End(TagEnd::TableCell) => {
                let close = if table.head { "</th>" } else { "</td>" };
                events.push(Event::Html(close.into()));
            }
            Event::End(TagEnd::Table) => {
                events.push(Event::End(TagEnd::Table));
                events.push(Event::Html("</div>".into()));
            }
            other => events.push(other),
        }
    }
    // An unclosed fence (a streaming tail) still shows what it holds.
    if let Some((language, body)) = code.take() {
        events.push(Event::Html(code_block(&language, &body, highlight).into()));
    }
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    html::push_html(&mut out, events.into_iter());
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn tables_task_lists_quotes_and_strikethrough_are_rendered() {
        let html = render(
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] open\n\n> quoted\n\n~~old~~",
            true,
        );
        assert!(html.contains("<div class=\"table-wrap\"><table>"), "{html}");
        assert!(html.contains("<td>2</td>"), "{html}");
        assert!(!html.contains("style="), "{html}");
        let aligned = render("| a | b |\n|:-:|--:|\n| 1 | 2 |", true);
        assert!(
            aligned.contains("<th class=\"align-center\">a</th>"),
            "{aligned}"
        );
        assert!(
            aligned.contains("<td class=\"align-right\">2</td>"),
            "{aligned}"
        );
        assert!(html.contains("type=\"checkbox\""), "{html}");
        assert!(html.contains("<blockquote>"), "{html}");
        assert!(html.contains("<del>old</del>"), "{html}");
    }

    #[test]
    fn raw_html_is_shown_as_text_and_never_as_markup() {
        let html = render(
            "<script>alert(1)</script>\n\nhi <img src=x onerror=alert(1)> there",
            true,
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
    }

    #[test]
    fn links_keep_to_web_and_mail_addresses_and_images_are_not_loaded() {
        let html = render(
            "[site](https://example.com \"t\") [bad](javascript:alert(1)) [data](DATA:text/html,x) ![cat](https://example.com/c.png)",
            true,
        );
        assert!(
            html.contains(
                "<a href=\"https://example.com\" title=\"t\" target=\"_blank\" rel=\"noopener noreferrer\">site</a>"
            ),
            "{html}"
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.to_ascii_lowercase().contains("data:"), "{html}");
        assert!(html.contains("bad"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("class=\"image-link\""), "{html}");
    }

    #[test]
    fn an_attribute_cannot_be_closed_from_a_link() {
        let html = render("[x](https://a.example/\"onmouseover=alert(1))", true);
        assert!(!html.contains("\"onmouseover"), "{html}");
    }

    #[test]
    fn code_is_highlighted_by_its_language_and_carries_a_copy_button() {
        let html = render("```rust\nfn main() { let x = 1; }\n```", true);
        assert!(html.contains("class=\"copy\""), "{html}");
        assert!(html.contains("<span class=\"hl-keyword\">fn"), "{html}");
        assert!(
            html.contains("<span class=\"hl-number\">1</span>"),
            "{html}"
        );
        assert!(html.contains("data-language=\"rust\""), "{html}");
        let plain = render("```rust\nfn main() {}\n```", false);
        assert!(!plain.contains("hl-keyword"), "{plain}");
        assert!(plain.contains("fn main() {}"), "{plain}");
    }

    #[test]
    fn cjk_text_and_an_unclosed_fence_come_through() {
        let html = render("你好，**世界**。\n\n```py\nprint(1)", false);
        assert!(html.contains("你好，<strong>世界</strong>。"), "{html}");
        assert!(html.contains("print(1)"), "{html}");
    }
}
