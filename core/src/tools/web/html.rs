//! HTML → readable text for web_fetch: the title, headings as `#` lines, paragraphs and
//! list items on their own lines, links marked `text [n]` with their addresses listed
//! separately; scripts, styles and other non-text parts dropped. Built on html5gum's
//! tokenizer (no DOM: mis-nested markup is taken as it comes). It reads a string and
//! returns text; it never fetches.

use html5gum::{DefaultEmitter, EndTag, StartTag, Token, Tokenizer};
use reqwest::Url;

use super::layout::Out;

/// A page reduced to text.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Page {
    pub title: Option<String>,
    /// The body text; link `n` is marked `[n]` after its text.
    pub text: String,
    /// Link targets, `links[n - 1]` for marker `[n]`.
    pub links: Vec<String>,
}

/// Elements whose content is never text for a reader.
const SKIPPED: &[&[u8]] = &[
    b"script",
    b"style",
    b"noscript",
    b"template",
    b"svg",
    b"iframe",
    b"object",
    b"select",
    b"canvas",
    b"nav",
    b"button",
    b"textarea",
    b"dialog",
];

/// Elements that start and end on a line of their own.
const BLOCKS: &[&[u8]] = &[
    b"p",
    b"div",
    b"section",
    b"article",
    b"main",
    b"header",
    b"footer",
    b"aside",
    b"ul",
    b"ol",
    b"dl",
    b"dt",
    b"dd",
    b"table",
    b"blockquote",
    b"pre",
    b"form",
    b"figure",
    b"figcaption",
    b"address",
    b"details",
    b"summary",
    b"fieldset",
    b"hr",
    b"body",
];

/// Elements that never have content or an end tag.
const VOID: &[&[u8]] = &[
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta", b"param",
    b"source", b"track", b"wbr",
];

/// The part of a page worth reading, when it marks one: its `<main>` (or
/// `role="main"`) element, else its `<article>`s, else everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Focus {
    Main,
    Articles,
    #[default]
    Everything,
}

/// Less text than this in `<main>` or the `<article>`s means they are not the content.
const MIN_FOCUS_BYTES: usize = 200;

/// Reduce `html`, fetched from `base`, to text. Relative links are resolved against
/// `base` (or the page's `<base href>`); only http(s) links to other pages are numbered.
pub(super) fn to_text(html: &str, base: &Url) -> Page {
    let focus = find_focus(html);
    let page = read(html, base, focus);
    // A page whose marked part is (nearly) empty is better read whole.
    if focus != Focus::Everything && page.text.len() < MIN_FOCUS_BYTES {
        return read(html, base, Focus::Everything);
    }
    page
}

fn read(html: &str, base: &Url, focus: Focus) -> Page {
    let mut reader = Reader {
        focus,
        base: Some(base.clone()),
        page: Some(without_fragment(base)),
        ..Reader::default()
    };
    for token in tokens(html) {
        match token {
            Token::StartTag(tag) => reader.start(&tag),
            Token::EndTag(tag) => reader.end(&tag),
            Token::String(text) => reader.text(&String::from_utf8_lossy(&text)),
            Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
        }
    }
    reader.finish()
}

fn tokens(html: &str) -> impl Iterator<Item = Token<()>> + '_ {
    let mut emitter = DefaultEmitter::default();
    // Script, style and title content is then raw text, not parsed as tags.
    emitter.naively_switch_states(true);
    Tokenizer::new_with_emitter(html, emitter).flatten()
}

fn find_focus(html: &str) -> Focus {
    let mut focus = Focus::Everything;
    for token in tokens(html) {
        if let Token::StartTag(tag) = token {
            if is_main(&tag) {
                return Focus::Main;
            }
            if tag.name == b"article" {
                focus = Focus::Articles;
            }
        }
    }
    focus
}

fn is_main(tag: &StartTag<()>) -> bool {
    tag.name == b"main" || attr(tag, "role").as_deref() == Some("main")
}

fn attr(tag: &StartTag<()>, key: &str) -> Option<String> {
    tag.attributes
        .get(key.as_bytes())
        .map(|value| String::from_utf8_lossy(value).trim().to_owned())
}

fn without_fragment(url: &Url) -> Url {
    let mut url = url.clone();
    url.set_fragment(None);
    url
}

/// An open element tracked to its matching end tag (same-name nesting counted).
struct Open {
    name: Vec<u8>,
    depth: usize,
}

impl Open {
    fn new(tag: &StartTag<()>) -> Option<Self> {
        let name = tag.name.as_slice();
        (!tag.self_closing && !VOID.contains(&name)).then(|| Self {
            name: name.to_vec(),
            depth: 1,
        })
    }

    /// Count a start tag.
    fn start(&mut self, name: &[u8]) {
        if name == self.name {
            self.depth += 1;
        }
    }

    /// Count an end tag; true once the element has closed.
    fn end(&mut self, name: &[u8]) -> bool {
        if name == self.name {
            self.depth -= 1;
        }
        self.depth == 0
    }
}

#[derive(Default)]
struct Reader {
    focus: Focus,
    /// The focus element we are inside, when the page has one.
    in_focus: Option<Open>,
    /// An element whose content is dropped (script, nav, hidden …).
    ignoring: Option<Open>,
    base: Option<Url>,
    /// This page's address, to leave links into the same page unnumbered.
    page: Option<Url>,
    out: Out,
    title: Option<String>,
    in_title: bool,
    /// Where the current table row's text began (a row's first text gets no ` | `).
    row_start: usize,
    /// Depth inside `<pre>`, where whitespace is kept.
    pre: usize,
    /// The open link's target and where its text began.
    link: Option<(String, usize)>,
    links: Vec<String>,
}

impl Reader {
    fn start(&mut self, tag: &StartTag<()>) {
        let name = tag.name.as_slice();
        if let Some(ignoring) = &mut self.ignoring {
            ignoring.start(name);
            return;
        }
        if name == b"title" {
            self.in_title = self.title.is_none() && !tag.self_closing;
            return;
        }
        if name == b"base"
            && let (Some(base), Some(href)) = (&self.base, attr(tag, "href"))
        {
            self.base = base.join(&href).ok().or_else(|| self.base.clone());
        }
        let hidden = tag.attributes.contains_key(b"hidden".as_slice())
            || attr(tag, "aria-hidden").as_deref() == Some("true")
            || attr(tag, "role").as_deref() == Some("navigation")
            // "This page in another language": a list of those is no part of the text.
            || (name == b"a" && tag.attributes.contains_key(b"hreflang".as_slice()));
        if SKIPPED.contains(&name) || hidden {
            self.ignoring = Open::new(tag);
            return;
        }
        match (&mut self.in_focus, self.focus) {
            (Some(open), _) => open.start(name),
            (None, Focus::Main) if is_main(tag) => self.in_focus = Open::new(tag),
            (None, Focus::Articles) if name == b"article" => self.in_focus = Open::new(tag),
            (None, Focus::Main | Focus::Articles) => return,
            (None, Focus::Everything) => {}
        }
        match name {
            b"br" => self.out.line_break(1),
            b"tr" => {
                self.out.line_break(1);
                self.row_start = self.out.written();
            }
            b"li" => self.out.bullet(),
            b"td" | b"th" => {
                self.out.cell(self.out.written() == self.row_start);
            }
            b"pre" => {
                self.out.line_break(2);
                self.pre += 1;
            }
            b"a" => self.link = attr(tag, "href").map(|href| (href, self.out.written())),
            _ => {
                if let Some(level) = heading_level(name) {
                    self.out.line_break(2);
                    self.out.push_raw(&"#".repeat(level));
                    self.out.push_raw(" ");
                } else if BLOCKS.contains(&name) {
                    self.out.line_break(2);
                }
            }
        }
    }

    fn end(&mut self, tag: &EndTag<()>) {
        let name = tag.name.as_slice();
        if let Some(ignoring) = &mut self.ignoring {
            if ignoring.end(name) {
                self.ignoring = None;
            }
            return;
        }
        if name == b"title" {
            self.in_title = false;
            return;
        }
        match self.in_focus.as_mut().map(|open| open.end(name)) {
            Some(true) => self.in_focus = None,
            Some(false) => {}
            None if self.focus != Focus::Everything => return,
            None => {}
        }
        match name {
            b"a" => {
                // A link with no text of its own (an image) gets no marker.
                if let Some((href, began)) = self.link.take()
                    && self.out.written() > began
                    && let Some(n) = self.number(&href)
                {
                    self.out.attach(&format!("[{n}]"));
                }
            }
            b"pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.out.line_break(2);
            }
            b"li" => self.out.end_item(),
            b"tr" => self.out.line_break(1),
            _ if heading_level(name).is_some() || BLOCKS.contains(&name) => {
                self.out.line_break(2);
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if self.in_title {
            self.title.get_or_insert_with(String::new).push_str(text);
        } else if self.ignoring.is_none()
            && (self.in_focus.is_some() || self.focus == Focus::Everything)
        {
            self.out.push_text(text, self.pre > 0);
        }
    }

    /// The marker number for `href`, reusing one already given to the same address.
    fn number(&mut self, href: &str) -> Option<usize> {
        let url = self.base.as_ref()?.join(href).ok()?;
        // Another part of this same page adds nothing to read.
        if !matches!(url.scheme(), "http" | "https") || Some(without_fragment(&url)) == self.page {
            return None;
        }
        let url = url.to_string();
        match self.links.iter().position(|known| *known == url) {
            Some(index) => Some(index + 1),
            None => {
                self.links.push(url);
                Some(self.links.len())
            }
        }
    }

    fn finish(self) -> Page {
        let title = self
            .title
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty());
        Page {
            title,
            text: self.out.finish(),
            links: self.links,
        }
    }
}

fn heading_level(name: &[u8]) -> Option<usize> {
    match name {
        [b'h', digit @ b'1'..=b'6'] => Some(usize::from(digit - b'0')),
        _ => None,
    }
}

/// Plain text from an HTML fragment (search snippets with `<strong>` and entities).
pub(super) fn strip_tags(fragment: &str) -> String {
    let mut out = Out::default();
    for token in Tokenizer::new(fragment).flatten() {
        if let Token::String(text) = token {
            out.push_text(&String::from_utf8_lossy(&text), false);
        }
    }
    out.finish()
}
