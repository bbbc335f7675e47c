//! The markdown → Slack mrkdwn writer: walks pulldown-cmark's events and writes Slack's
//! markup, with `&`, `<` and `>` escaped everywhere (Slack's only escapes).
//!
//! Mapping: `**b**` → `*b*`, `*i*` → `_i_`, `~~s~~` → `~s~`, inline code stays; fenced
//! and indented code → a ```` ``` ```` block without the language (Slack shows none);
//! links → `<url|text>` (`<url>` when the text is the URL); images → a link to the image;
//! headings → a bold line; list items → lines starting `• ` or `1. `, two more spaces per
//! level; quotes → lines starting `> `; tables → a code block of their source; rules → a
//! line of dashes; inline HTML is shown as text. mrkdwn has no escape for `*`, `_` or `~`,
//! so such characters in plain text are left as they are.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub(super) fn render(markdown: &str) -> String {
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let mut events = Parser::new_ext(markdown, options).into_offset_iter();
    let mut writer = Writer {
        buffers: vec![Buffer::default()],
        ..Writer::default()
    };
    while let Some((event, range)) = events.next() {
        if let Event::Start(Tag::Table(_)) = event {
            for (inner, _) in events.by_ref() {
                if matches!(inner, Event::End(TagEnd::Table)) {
                    break;
                }
            }
            let source = markdown.get(range).unwrap_or_default().trim_end();
            writer.code_block(source);
        } else {
            writer.event(event);
        }
    }
    writer.finish()
}

/// Escapes `&`, `<` and `>`, the characters Slack reads as markup.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// Text being written for one block container (the whole reply, or one quote).
#[derive(Default)]
struct Buffer {
    text: String,
    /// Newlines owed before the next content, written lazily so nothing ends blank.
    pending: usize,
}

#[derive(Default)]
struct Writer {
    /// The reply, then one buffer per open quote (its lines get `> ` when it closes).
    buffers: Vec<Buffer>,
    /// Open lists, innermost last: the next number of an ordered list, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Per open link or image: its URL and where its text starts.
    links: Vec<(String, usize)>,
    /// The code block being read.
    code: Option<String>,
    /// A list marker was just written: the item's first paragraph goes on its line.
    item_open: bool,
}

impl Writer {
    fn buffer(&mut self) -> &mut Buffer {
        if self.buffers.is_empty() {
            self.buffers.push(Buffer::default());
        }
        let last = self.buffers.len() - 1;
        &mut self.buffers[last]
    }

    /// Writes raw mrkdwn, first paying any owed newlines.
    fn raw(&mut self, text: &str) {
        self.item_open = false;
        let buffer = self.buffer();
        if !buffer.text.is_empty() {
            for _ in 0..buffer.pending {
                buffer.text.push('\n');
            }
        }
        buffer.pending = 0;
        buffer.text.push_str(text);
    }

    fn text(&mut self, text: &str) {
        self.raw(&escape(text));
    }

    /// A new block starts: owe a blank line (one newline inside a list).
    fn block(&mut self) {
        let gap = if self.lists.is_empty() { 2 } else { 1 };
        let buffer = self.buffer();
        buffer.pending = buffer.pending.max(gap);
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(code) => self.raw(&format!("`{}`", escape(&code))),
            Event::Html(text) | Event::InlineHtml(text) => match &mut self.code {
                Some(code) => code.push_str(&text),
                None => self.text(&text),
            },
            Event::InlineMath(text) | Event::DisplayMath(text) => self.text(&text),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::SoftBreak | Event::HardBreak => {
                let buffer = self.buffer();
                buffer.pending = buffer.pending.max(1);
            }
            Event::Rule => {
                self.block();
                self.raw("———");
                self.block();
            }
            Event::TaskListMarker(done) => self.raw(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            // A paragraph right after a list marker continues the item's line.
            Tag::Paragraph | Tag::HtmlBlock if !self.starts_item() => self.block(),
            Tag::Heading { .. } => {
                self.block();
                self.raw("*");
            }
            Tag::BlockQuote(_) => {
                self.block();
                self.buffers.push(Buffer::default());
            }
            Tag::CodeBlock(_) => self.code = Some(String::new()),
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.block();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                let buffer = self.buffer();
                buffer.pending = buffer.pending.max(1);
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_string(),
                };
                self.raw(&format!("{}{marker}", "  ".repeat(depth)));
                self.mark_item_start();
            }
            Tag::Emphasis => self.raw("_"),
            Tag::Strong => self.raw("*"),
            Tag::Strikethrough => self.raw("~"),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                let start = self.buffer().text.len();
                self.links.push((dest_url.to_string(), start));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.raw("*");
                self.block();
            }
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.block(),
            TagEnd::BlockQuote(_) => {
                if self.buffers.len() > 1
                    && let Some(inner) = self.buffers.pop()
                {
                    let quoted: Vec<String> = inner
                        .text
                        .lines()
                        .map(|line| format!("> {line}").trim_end().to_string())
                        .collect();
                    self.raw(&quoted.join("\n"));
                }
                self.block();
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                self.code_block(code.trim_end_matches('\n'));
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.block();
            }
            TagEnd::Emphasis => self.raw("_"),
            TagEnd::Strong => self.raw("*"),
            TagEnd::Strikethrough => self.raw("~"),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            _ => {}
        }
    }

    fn code_block(&mut self, code: &str) {
        self.block();
        self.raw(&format!("```\n{}\n```", escape(code)));
        self.block();
    }

    fn close_link(&mut self) {
        let Some((url, start)) = self.links.pop() else {
            return;
        };
        let buffer = self.buffer();
        let label: String = buffer.text.get(start..).unwrap_or_default().to_string();
        buffer.text.truncate(start);
        let url = url.replace('>', "%3E").replace('|', "%7C");
        let shown = label.trim();
        if shown.is_empty() || shown == escape(&url) {
            self.raw(&format!("<{}>", escape(&url)));
        } else {
            // `|` ends the URL in Slack's link syntax; in the label it would cut it short.
            self.raw(&format!("<{}|{}>", escape(&url), shown.replace('|', "¦")));
        }
    }

    /// A paragraph right after a list marker continues the item's line.
    fn starts_item(&mut self) -> bool {
        let item = self.item_open;
        self.item_open = false;
        item
    }

    fn mark_item_start(&mut self) {
        self.item_open = true;
    }

    fn finish(mut self) -> String {
        while self.buffers.len() > 1 {
            self.end(TagEnd::BlockQuote(None));
        }
        self.buffers
            .pop()
            .map(|b| b.text.trim_end().to_string())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn inline_styles_map_to_mrkdwn() {
        assert_eq!(
            render("Some **bold**, *italic*, ~~gone~~ and `x < y` & more"),
            "Some *bold*, _italic_, ~gone~ and `x &lt; y` &amp; more"
        );
    }

    #[test]
    fn links_headings_lists_and_quotes() {
        let text = "# Plan\n\nSee [the docs](https://e.com/a?b=1&c=2) or <https://e.com>.\n\n- one\n- two\n  1. first\n  2. second\n\n> quoted\n> text";
        assert_eq!(
            render(text),
            "*Plan*\n\nSee <https://e.com/a?b=1&amp;c=2|the docs> or <https://e.com>.\n\n• one\n• two\n  1. first\n  2. second\n\n> quoted\n> text"
        );
    }

    #[test]
    fn code_blocks_lose_their_language_and_keep_their_text() {
        assert_eq!(
            render("Run:\n\n```sh\necho \"<hi>\" && ls\n```\n\nDone."),
            "Run:\n\n```\necho \"&lt;hi&gt;\" &amp;&amp; ls\n```\n\nDone."
        );
    }

    #[test]
    fn loose_list_items_keep_their_text_on_the_marker_line() {
        assert_eq!(render("- one\n\n- two\n\nAfter."), "• one\n• two\n\nAfter.");
    }

    #[test]
    fn tables_become_code_blocks() {
        assert_eq!(
            render("| a | b |\n|---|---|\n| 1 | 2 |"),
            "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```"
        );
    }
}
