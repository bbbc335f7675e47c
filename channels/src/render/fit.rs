//! Splitting a markdown reply so that each chunk still fits once rendered to a platform's
//! markup (escapes and link syntax make text grow). Uses `split` for every cut; this file
//! only decides when to split again, and how much smaller.

use super::split::split;

/// Splits `markdown` into chunks whose rendered form (`render`) measures at most `limit`
/// in `measure` units; returns the markdown of each chunk, in order. A chunk that grows
/// past the limit when rendered is split again with a limit shrunk in proportion to the
/// growth, down to `min_limit` (below which a chunk is kept as it is: only text that
/// grows more than `limit / min_limit`-fold can be over).
pub fn split_rendered(
    markdown: &str,
    limit: usize,
    min_limit: usize,
    measure: &dyn Fn(&str) -> usize,
    render: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for piece in split(markdown, limit, measure) {
        push_fitting(piece, limit, limit, min_limit, measure, render, &mut out);
    }
    out
}

fn push_fitting(
    markdown: String,
    chunk_limit: usize,
    limit: usize,
    min_limit: usize,
    measure: &dyn Fn(&str) -> usize,
    render: &dyn Fn(&str) -> String,
    out: &mut Vec<String>,
) {
    let size = measure(&render(&markdown));
    if size <= limit || chunk_limit <= min_limit {
        out.push(markdown);
        return;
    }
    let proportional = chunk_limit * limit / size * 9 / 10;
    let smaller = proportional.min(chunk_limit * 3 / 4).max(min_limit);
    for piece in split(&markdown, smaller, measure) {
        push_fitting(piece, smaller, limit, min_limit, measure, render, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::char_len;

    #[test]
    fn growing_text_is_split_until_it_fits() {
        let doubled = |s: &str| s.replace('&', "&amp;");
        let text = "a & b & c ".repeat(500);
        let chunks = split_rendered(&text, 1000, 100, &char_len, &doubled);
        assert!(chunks.len() > 5);
        for chunk in &chunks {
            assert!(char_len(&doubled(chunk)) <= 1000);
        }
        let joined: Vec<&str> = chunks.iter().flat_map(|c| c.split_whitespace()).collect();
        assert_eq!(joined, text.split_whitespace().collect::<Vec<_>>());
    }
}
