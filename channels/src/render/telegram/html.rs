//! The markdown → Telegram HTML writer: walks pulldown-cmark's events and writes only
//! Telegram's tags, properly nested, with all text escaped.
//!
//! Telegram has no headings, lists or tables, so: headings are bold lines; list items are
//! lines starting with `• ` or `1. `, two more spaces per nesting level; tables are a
//! `<pre>` of their markdown source (aligned as the model wrote it); rules are a line of
//! dashes; images are links to the image (text: the alt text, else the URL); inline HTML
//! and HTML blocks are shown as escaped text. Telegram forbids some nestings, so a
//! blockquote inside a blockquote keeps only its text, inline code and images inside a
//! link become plain text, and links whose scheme Telegram may refuse (anything but
//! `http`, `https`, `tg`, `mailto`) become their text alone.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// Converts markdown to Telegram HTML (see the module doc for the mapping).
pub(super) fn render(markdown: &str) -> String {
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let mut events = Parser::new_ext(markdown, options).into_offset_iter();
    let mut html = Html {
        fresh: true,
        ..Html::default()
    };
    while let Some((event, range)) = events.next() {
        if let Event::Start(Tag::Table(_)) = event {
            // The table's own events are skipped: its source is shown instead.
            for (inner, _) in events.by_ref() {
                if matches!(inner, Event::End(TagEnd::Table)) {
                    break;
                }
            }
            html.table(markdown.get(range).unwrap_or_default());
        } else {
            html.event(event);
        }
    }
    html.out
}

/// Escapes text for Telegram HTML: `&`, `<`, `>`, and `"` too when `quotes` (attributes).
pub(super) fn escape(text: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The language of a fenced code block's info string, if it is a plain name.
fn language(info: &str) -> Option<&str> {
    let lang = info.split_whitespace().next()?;
    let plain = lang
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+#._-".contains(c));
    plain.then_some(lang)
}

/// Whether Telegram accepts `url` as a link target.
fn linkable(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    ["http://", "https://", "tg://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
}

/// The HTML being written, and where in the markdown's structure the writer is.
#[derive(Default)]
struct Html {
    out: String,
    /// Newlines owed before the next content (1 inside lists, 2 between top-level
    /// blocks); written lazily so the output never ends with blank lines.
    pending: usize,
    /// Nothing written since the start or an opening block tag: owed newlines are dropped.
    fresh: bool,
    /// Open lists, innermost last: the next number of an ordered list, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Open blockquotes; only the outermost is a tag (Telegram can't nest them).
    quotes: usize,
    /// Per open link or image: whether an `<a>` was written, where its text starts, and
    /// its URL (shown when the text is empty).
    anchors: Vec<Anchor>,
    /// The code block being read: its text so far, and whether `<code>` was opened.
    code: Option<(String, bool)>,
}

struct Anchor {
    opened: bool,
    text_start: usize,
    url: String,
}

impl Html {
    fn event(&mut self, event: Event) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some((code, _)) => code.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(code) if self.anchors.iter().any(|a| a.opened) => self.text(&code),
            Event::Code(code) => {
                self.tag("<code>");
                self.text(&code);
                self.close("</code>");
            }
            Event::Html(text) | Event::InlineHtml(text) => self.text(&text),
            Event::InlineMath(text) | Event::DisplayMath(text) => self.text(&text),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::SoftBreak | Event::HardBreak => self.line_break(),
            Event::Rule => {
                self.block();
                self.text("———");
                self.pending = self.block_gap();
            }
            Event::TaskListMarker(done) => self.text(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.block(),
            Tag::Heading { .. } => {
                self.block();
                self.tag("<b>");
            }
            Tag::BlockQuote(_) => {
                self.block();
                if self.quotes == 0 {
                    self.block_tag("<blockquote>");
                    self.fresh = true;
                }
                self.quotes += 1;
            }
            Tag::CodeBlock(kind) => {
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => language(info),
                    CodeBlockKind::Indented => None,
                };
                self.block();
                match lang {
                    Some(lang) => self.block_tag(&format!("<pre><code class=\"language-{lang}\">")),
                    None => self.block_tag("<pre>"),
                }
                self.code = Some((String::new(), lang.is_some()));
            }
            Tag::List(first) => {
                self.pending = self.pending.max(if self.lists.is_empty() { 2 } else { 1 });
                self.lists.push(first);
            }
            Tag::Item => self.item(),
            Tag::Emphasis => self.tag("<i>"),
            Tag::Strong => self.tag("<b>"),
            Tag::Strikethrough => self.tag("<s>"),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => self.anchor(&dest_url),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::FootnoteDefinition => self.pending = self.block_gap(),
            TagEnd::HtmlBlock => {
                // An HTML block's lines come with their newlines; the gap replaces the last.
                let kept = self.out.trim_end_matches('\n').len();
                self.out.truncate(kept);
                self.pending = self.block_gap();
            }
            TagEnd::Heading(_) => {
                self.close("</b>");
                self.pending = self.block_gap();
            }
            TagEnd::BlockQuote(_) => {
                self.quotes = self.quotes.saturating_sub(1);
                if self.quotes == 0 {
                    self.close("</blockquote>");
                    self.pending = self.block_gap();
                }
            }
            TagEnd::CodeBlock => {
                let (code, lang) = self.code.take().unwrap_or_default();
                let code = code.strip_suffix('\n').unwrap_or(&code);
                self.out.push_str(&escape(code, false));
                self.close(if lang { "</code></pre>" } else { "</pre>" });
                self.pending = self.block_gap();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.pending = self.block_gap();
            }
            TagEnd::Item => {
                self.pending = 1;
                self.fresh = false;
            }
            TagEnd::Emphasis => self.close("</i>"),
            TagEnd::Strong => self.close("</b>"),
            TagEnd::Strikethrough => self.close("</s>"),
            TagEnd::Link | TagEnd::Image => {
                if let Some(anchor) = self.anchors.pop() {
                    if self.out.len() == anchor.text_start {
                        self.text(&anchor.url);
                    }
                    if anchor.opened {
                        self.close("</a>");
                    }
                }
            }
            _ => {}
        }
    }

    /// The gap owed after a block: a newline inside lists, a blank line elsewhere.
    fn block_gap(&self) -> usize {
        if self.lists.is_empty() { 2 } else { 1 }
    }

    /// Writes the owed newlines, indenting a continuation line inside a list item.
    fn flush(&mut self, indent: usize) {
        if self.fresh {
            self.pending = 0;
        }
        if self.pending > 0 {
            self.out.push_str(&"\n".repeat(self.pending));
            self.out.push_str(&" ".repeat(indent));
            self.pending = 0;
        }
        self.fresh = false;
    }

    fn text(&mut self, text: &str) {
        self.flush(2 * self.lists.len());
        self.out.push_str(&escape(text, false));
    }

    /// A block starts: it goes on a line of its own, unless it is the first thing in the
    /// text, a quote or a list item.
    fn block(&mut self) {
        self.pending = self.pending.max(1);
    }

    /// Writes an inline opening tag (after any owed newlines).
    fn tag(&mut self, tag: &str) {
        self.flush(2 * self.lists.len());
        self.out.push_str(tag);
    }

    /// Writes a block's opening tag: unindented, as Telegram shows blocks full width.
    fn block_tag(&mut self, tag: &str) {
        self.flush(0);
        self.out.push_str(tag);
    }

    /// Writes a closing tag right after the content it closes.
    fn close(&mut self, tag: &str) {
        self.pending = 0;
        self.out.push_str(tag);
    }

    fn line_break(&mut self) {
        self.out.push('\n');
        self.out.push_str(&" ".repeat(2 * self.lists.len()));
    }

    /// Starts a list item: its indentation and its bullet or number.
    fn item(&mut self) {
        let depth = self.lists.len().saturating_sub(1);
        self.flush(0);
        self.out.push_str(&" ".repeat(2 * depth));
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let marker = format!("{n}. ");
                *n += 1;
                marker
            }
            _ => "• ".to_owned(),
        };
        self.out.push_str(&marker);
        // The item's first block goes on the marker's line.
        self.fresh = true;
    }

    /// Starts a link or an image: an `<a>` when Telegram can take it here.
    fn anchor(&mut self, url: &str) {
        let opened = linkable(url) && !self.anchors.iter().any(|a| a.opened);
        if opened {
            self.tag(&format!("<a href=\"{}\">", escape(url, true)));
        } else {
            self.flush(2 * self.lists.len());
        }
        let text_start = self.out.len();
        self.anchors.push(Anchor {
            opened,
            text_start,
            url: url.to_owned(),
        });
    }

    /// A table, shown as its markdown source in a `<pre>`.
    fn table(&mut self, source: &str) {
        self.block();
        self.block_tag("<pre>");
        self.out.push_str(&escape(source.trim_end(), false));
        self.close("</pre>");
        self.pending = self.block_gap();
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Checks what Telegram's parser requires: only its tags, properly nested, no
    /// forbidden nesting, and every `&` starting an entity.
    pub(in crate::render) fn assert_valid(html: &str) {
        let mut open: Vec<&str> = Vec::new();
        let mut rest = html;
        while let Some(i) = rest.find(['<', '&']) {
            rest = &rest[i..];
            if rest.starts_with('&') {
                let ok = ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| rest.starts_with(e));
                assert!(ok, "bare & in {html:?}");
                rest = &rest[1..];
                continue;
            }
            let end = rest
                .find('>')
                .unwrap_or_else(|| panic!("unclosed tag in {html:?}"));
            let tag = &rest[1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop(), Some(name), "misnested in {html:?}");
                continue;
            }
            let name = tag.split(' ').next().unwrap_or_default();
            assert!(
                ["b", "i", "s", "code", "pre", "a", "blockquote"].contains(&name),
                "{tag}"
            );
            assert!(!open.contains(&"code"), "a tag inside code in {html:?}");
            let in_pre = open.last() == Some(&"pre");
            assert!(!in_pre || tag.starts_with("code class="), "{tag} in pre");
            if matches!(name, "pre" | "blockquote" | "a") {
                assert!(!open.contains(&name), "nested {name} in {html:?}");
            }
            if name == "code" || name == "pre" {
                assert!(!open.contains(&"a"), "code in a link in {html:?}");
            }
            open.push(name);
        }
        assert!(open.is_empty(), "unclosed {open:?} in {html:?}");
    }

    fn html(markdown: &str) -> String {
        let out = render(markdown);
        assert_valid(&out);
        out
    }

    #[test]
    fn inline_styles() {
        assert_eq!(
            html("**bold** *it* `a<b` ~~gone~~ ***both***"),
            "<b>bold</b> <i>it</i> <code>a&lt;b</code> <s>gone</s> <i><b>both</b></i>"
        );
    }

    #[test]
    fn code_blocks_keep_their_language() {
        assert_eq!(
            html("```rust\nfn main() {\n    x < y && z\n}\n```"),
            "<pre><code class=\"language-rust\">fn main() {\n    x &lt; y &amp;&amp; z\n}</code></pre>"
        );
        assert_eq!(html("~~~\nplain\n~~~"), "<pre>plain</pre>");
        assert_eq!(html("```\"><script>\nx\n```"), "<pre>x</pre>");
        assert_eq!(html("    indented\n"), "<pre>indented</pre>");
    }

    #[test]
    fn links_and_images() {
        assert_eq!(
            html("[site](https://e.com/?a=1&b=\"2\") and <https://x.org>"),
            "<a href=\"https://e.com/?a=1&amp;b=&quot;2&quot;\">site</a> and \
             <a href=\"https://x.org\">https://x.org</a>"
        );
        assert_eq!(
            html("![a cat](https://c.at/1.png)"),
            "<a href=\"https://c.at/1.png\">a cat</a>"
        );
        assert_eq!(html("[run](javascript:alert(1))"), "run");
        assert_eq!(
            html("[`code` ![img](https://i/p.png)](https://l.nk)"),
            "<a href=\"https://l.nk\">code img</a>"
        );
    }

    #[test]
    fn headings_paragraphs_and_breaks() {
        assert_eq!(
            html("# Title\n\nFirst line\nsecond line\n\n## Next"),
            "<b>Title</b>\n\nFirst line\nsecond line\n\n<b>Next</b>"
        );
        assert_eq!(html("a\n\n---\n\nb"), "a\n\n———\n\nb");
    }

    #[test]
    fn lists_are_bullet_and_numbered_lines() {
        assert_eq!(
            html("Intro\n\n- a\n- b\n  - c\n  - d\n- e\n\n3. x\n4. y\n\nEnd"),
            "Intro\n\n• a\n• b\n  • c\n  • d\n• e\n\n3. x\n4. y\n\nEnd"
        );
        assert_eq!(
            html("- one\n\n  more\n- [x] done"),
            "• one\n  more\n• ☑ done"
        );
        assert_eq!(
            html("1. a\n   ```sh\n   ls\n   ```"),
            "1. a\n<pre><code class=\"language-sh\">ls</code></pre>"
        );
    }

    #[test]
    fn html_in_markdown_is_shown_escaped() {
        assert_eq!(
            html("<script>alert('x')</script>\n\nFish & chips <b>not bold</b>"),
            "&lt;script&gt;alert('x')&lt;/script&gt;\n\nFish &amp; chips &lt;b&gt;not bold&lt;/b&gt;"
        );
    }

    #[test]
    fn quotes_and_tables() {
        assert_eq!(
            html("> said\n> > inner\n\nafter"),
            "<blockquote>said\n\ninner</blockquote>\n\nafter"
        );
        assert_eq!(
            html("| a | b |\n|---|---|\n| 1 | <2> |\n\nnext"),
            "<pre>| a | b |\n|---|---|\n| 1 | &lt;2&gt; |</pre>\n\nnext"
        );
    }

    #[test]
    fn tricky_input_stays_valid() {
        let inputs = [
            "**bold [link `code`](https://a.b) *it* ~~s~~**",
            "> ```py\n> x\n> ```\n> - item [l](tg://user?id=1)",
            "- a\n  > q\n  > > qq\n",
            "*unclosed **mixed* text**",
            "[a [b](https://x)](https://y)",
            "<div>\n*not md*\n</div>",
            "# H with `code` and [l](https://z)",
            "&amp; &lt; & <",
        ];
        for input in inputs {
            html(input);
        }
    }
}
