//! Characters that hide or disguise text, made visible before it is shown to someone
//! who must judge it: the command in an approval question, a speaker's name in a group.
//! A RIGHT-TO-LEFT OVERRIDE can make `rm -rf ~ #txt.sh` read as `hs.txt# ~ fr- mr`, a
//! zero-width space can make two names look alike, a terminal escape can rewrite the
//! line above. Each such character is shown as its code point, `\u{202e}`.
//!
//! It escapes; it does not remove. Whoever reads the result sees that something was
//! there. Newline and tab are left alone (a command may be several lines).

use std::borrow::Cow;

/// Whether `c` is one we show escaped: C0 and C1 controls but newline and tab (and
/// DEL), the bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069) and the zero-width characters (U+200B–U+200D, U+2060, U+FEFF).
pub fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// `text` with every hidden character (see [`is_hidden`]) written as `\u{…}`
/// (lower-case hex, as Rust writes it); unchanged text is not copied.
pub fn escape_hidden(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_are_shown_as_their_code_points() {
        assert_eq!(
            escape_hidden("rm -rf ~ #\u{202E}hs.txt"),
            "rm -rf ~ #\\u{202e}hs.txt"
        );
        for (c, shown) in [
            ('\u{202A}', "\\u{202a}"),
            ('\u{202B}', "\\u{202b}"),
            ('\u{202C}', "\\u{202c}"),
            ('\u{202D}', "\\u{202d}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{2067}', "\\u{2067}"),
            ('\u{2068}', "\\u{2068}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{200E}', "\\u{200e}"),
            ('\u{200F}', "\\u{200f}"),
            ('\u{061C}', "\\u{61c}"),
        ] {
            assert_eq!(escape_hidden(&format!("a{c}b")), format!("a{shown}b"));
        }
    }

    #[test]
    fn zero_width_characters_are_shown_as_their_code_points() {
        for (c, shown) in [
            ('\u{200B}', "\\u{200b}"),
            ('\u{200C}', "\\u{200c}"),
            ('\u{200D}', "\\u{200d}"),
            ('\u{2060}', "\\u{2060}"),
            ('\u{FEFF}', "\\u{feff}"),
        ] {
            assert_eq!(escape_hidden(&format!("Ann{c}")), format!("Ann{shown}"));
        }
    }

    #[test]
    fn controls_are_shown_but_newline_and_tab_stay() {
        assert_eq!(
            escape_hidden("echo\u{1b}[2K\r\u{7f}\u{85}\u{9b}\0"),
            "echo\\u{1b}[2K\\u{d}\\u{7f}\\u{85}\\u{9b}\\u{0}"
        );
        assert_eq!(escape_hidden("a\n\tb"), "a\n\tb");
    }

    #[test]
    fn plain_text_is_left_as_it_is_and_not_copied() {
        for text in ["git push origin", "Zoë 👋 日本語 עברית العربية", ""] {
            assert!(matches!(escape_hidden(text), Cow::Borrowed(t) if t == text));
        }
    }
}
