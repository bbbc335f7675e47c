//! The HTML reduction on its own: what is kept, dropped and marked, on small pages
//! written to show one rule each.

use reqwest::Url;

use super::html::{Page, strip_tags, to_text};

fn page(html: &str) -> Page {
    to_text(html, &Url::parse("https://example.org/dir/page").unwrap())
}

#[test]
fn keeps_text_and_drops_code() {
    let p = page(
        "<html><head><title> The  Title </title><style>body{color:red}</style>\
         <script>var x = '<p>not text</p>';</script></head><body>\
         <h1>Main &amp; heading</h1><p>First   para\n with <b>bold</b> words.</p>\
         <noscript>enable js</noscript><ul><li>one</li><li>two</li></ul>\
         <p>See <a href=\"/other\">the other page</a> and <a href=\"#top\">top</a>.</p>\
         <pre>  keep\n    this</pre></body></html>",
    );
    assert_eq!(p.title.as_deref(), Some("The Title"));
    assert_eq!(
        p.text,
        "# Main & heading\n\nFirst para with bold words.\n\n- one\n- two\n\n\
         See the other page [1] and top.\n\n  keep\n    this"
    );
    assert_eq!(p.links, vec!["https://example.org/other".to_string()]);
}

#[test]
fn repeated_links_share_a_number_and_odd_schemes_get_none() {
    let p = page(
        "<a href='https://a.example/'>A</a> <a href='mailto:x@y'>mail</a> \
         <a href='javascript:void(0)'>js</a> <a href='https://a.example/'>again</a>",
    );
    assert_eq!(p.text, "A [1] mail js again [1]");
    assert_eq!(p.links.len(), 1);
}

#[test]
fn table_cells_are_separated() {
    let p = page("<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>");
    assert_eq!(p.text, "k | v\na | 1");
}

#[test]
fn a_page_with_main_shows_only_main() {
    let story = "Words of the story. ".repeat(12);
    let p = page(&format!(
        "<body><nav><a href='/x'>Menu</a></nav><header>Site name</header>\
         <main><h2>Story</h2><p>{story}<span aria-hidden='true'>icon</span></p>\
         <div hidden><div>secret</div></div><p>More <button>Share</button>words.</p>\
         </main><footer>(c) 2026</footer></body>"
    ));
    assert_eq!(
        p.text,
        format!("## Story\n\n{}\n\nMore words.", story.trim())
    );
    assert!(p.links.is_empty());
}

#[test]
fn articles_are_read_when_there_is_no_main() {
    let one = "One long enough to be content. ".repeat(4);
    let two = "Two long enough to be content. ".repeat(4);
    let p = page(&format!(
        "<div>chrome</div><article><p>{one}</p></article><aside>ad</aside>\
         <article><p>{two}</p></article>"
    ));
    assert_eq!(p.text, format!("{}\n\n{}", one.trim(), two.trim()));
}

#[test]
fn a_nearly_empty_main_is_not_taken_for_the_content() {
    let p = page("<main><p>Skip</p></main><div><p>The real text.</p></div>");
    assert_eq!(p.text, "Skip\n\nThe real text.");
}

#[test]
fn empty_items_image_links_and_translations_leave_no_marks() {
    let p = page(
        "<ul><li><a href='/pic'><img src='x.png'></a></li><li>real</li>\
         <li><a href='/de' hreflang='de'>Deutsch</a></li></ul>\
         <p><a href='https://example.org/dir/page#s2'>this page</a></p>",
    );
    assert_eq!(p.text, "- real\n\nthis page");
    assert!(p.links.is_empty());
}

#[test]
fn snippets_lose_their_tags() {
    assert_eq!(
        strip_tags("Rust is <strong>fast</strong> &amp; safe"),
        "Rust is fast & safe"
    );
}
