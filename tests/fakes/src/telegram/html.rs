//! `parse_mode: HTML` checked the way Telegram's parser does it, so a renderer that
//! would be refused in production is refused here too. Returns the plain text (tags
//! removed, character references decoded) or the description of Telegram's 400.
//!
//! Strict where Telegram is (unknown tags, unbalanced or crossed tags, an unclosed `<`,
//! `<span>` without `class="tg-spoiler"`), lenient where unsure (a bare `&` is text).

/// Tags Telegram accepts.
const SUPPORTED: &[&str] = &[
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "a",
    "code",
    "pre",
    "span",
    "tg-spoiler",
    "tg-emoji",
    "blockquote",
];

/// The plain text of `html`, or `Bad Request: can't parse entities: …`.
pub(crate) fn parse(html: &str) -> Result<String, String> {
    let fail = |why: String| format!("Bad Request: can't parse entities: {why}");
    let mut plain = String::with_capacity(html.len());
    let mut open: Vec<String> = Vec::new();
    let mut i = 0;
    while i < html.len() {
        let rest = &html[i..];
        if rest.starts_with('<') {
            let Some(end) = rest.find('>') else {
                return Err(fail(format!("Unclosed start tag at byte offset {i}")));
            };
            let inside = &rest[1..end];
            if let Some(closing) = inside.strip_prefix('/') {
                let name = closing.trim().to_ascii_lowercase();
                match open.pop() {
                    None => return Err(fail(format!("Unexpected end tag at byte offset {i}"))),
                    Some(top) if top != name => {
                        return Err(fail(format!(
                            "Unmatched end tag at byte offset {i}, expected \"</{top}>\", found \"</{name}>\""
                        )));
                    }
                    Some(_) => {}
                }
            } else {
                let name_end = inside
                    .find(|c: char| c.is_ascii_whitespace() || c == '/')
                    .unwrap_or(inside.len());
                let name = inside[..name_end].to_ascii_lowercase();
                if !SUPPORTED.contains(&name.as_str()) {
                    return Err(fail(format!(
                        "Unsupported start tag \"{name}\" at byte offset {i}"
                    )));
                }
                if name == "span" && !inside.contains("tg-spoiler") {
                    return Err(fail(format!(
                        "Tag \"span\" must have class \"tg-spoiler\" at byte offset {i}"
                    )));
                }
                open.push(name);
            }
            i += end + 1;
        } else if rest.starts_with('&') {
            match reference(rest) {
                Some((c, len)) => {
                    plain.push(c);
                    i += len;
                }
                None => {
                    plain.push('&');
                    i += 1;
                }
            }
        } else {
            let next = rest.find(['<', '&']).unwrap_or(rest.len());
            plain.push_str(&rest[..next]);
            i += next;
        }
    }
    match open.pop() {
        Some(tag) => Err(fail(format!(
            "Can't find end tag corresponding to start tag \"{tag}\""
        ))),
        None => Ok(plain),
    }
}

/// A character reference at the start of `text` (`&lt;`, `&#60;`, `&#x3c;` …): the
/// character and the reference's byte length.
fn reference(text: &str) -> Option<(char, usize)> {
    let end = text.find(';')?;
    if end > 12 {
        return None;
    }
    let body = &text[1..end];
    let c = match body {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        _ => {
            let number = body.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((c, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_telegram_markup_and_decodes() {
        let html = "<b>bold</b> <a href=\"https://x.y/?a=1&amp;b=2\">link</a> \
                    <pre><code class=\"language-rust\">a &lt; b &amp;&amp; c</code></pre> \
                    <span class=\"tg-spoiler\">s</span> <blockquote expandable>q</blockquote> \
                    Tom & Jerry &#x1F980;";
        assert_eq!(
            parse(html).unwrap(),
            "bold link a < b && c s q Tom & Jerry 🦀"
        );
    }

    #[test]
    fn refuses_what_telegram_refuses() {
        let cases = [
            ("<p>x</p>", "Unsupported start tag \"p\" at byte offset 0"),
            ("a <br/> b", "Unsupported start tag \"br\" at byte offset 2"),
            ("1 < 2 > 0", "Unsupported start tag \"\" at byte offset 2"),
            ("1 < 2", "Unclosed start tag at byte offset 2"),
            (
                "<b>x",
                "Can't find end tag corresponding to start tag \"b\"",
            ),
            ("x</b>", "Unexpected end tag at byte offset 1"),
            (
                "<b><i>x</b></i>",
                "Unmatched end tag at byte offset 7, expected \"</i>\", found \"</b>\"",
            ),
            ("x <b", "Unclosed start tag at byte offset 2"),
            (
                "<span>x</span>",
                "Tag \"span\" must have class \"tg-spoiler\" at byte offset 0",
            ),
        ];
        for (html, why) in cases {
            assert_eq!(
                parse(html).unwrap_err(),
                format!("Bad Request: can't parse entities: {why}"),
                "{html}"
            );
        }
    }
}
