//! The transformed forms of a secret that the scrubber also looks for: what `base64`
//! (standard and URL-safe, at any position in a larger encoded text), hex dumps (both
//! cases) and `rev` turn it into, and a header value's credential without its scheme.
//! This module only derives strings; matching them is `Scrubber`'s job.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

/// Derived base64 fragments shorter than this are dropped: too short to tell from chance.
pub(super) const MIN_FRAGMENT_LEN: usize = 12;

/// The secret's characters in reverse order (what `rev` prints).
pub(super) fn reversed(secret: &str) -> String {
    secret.chars().rev().collect()
}

/// The secret's encoded forms: its base64, standard and URL-safe, at each of the three
/// alignments it can have inside a longer encoded text, and its hex in both cases.
pub(super) fn encoded(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut forms = Vec::new();
    for offset in 0..3 {
        let fragment = base64_fragment(bytes, offset);
        if fragment.len() < MIN_FRAGMENT_LEN {
            continue;
        }
        forms.push(fragment.replace('+', "-").replace('/', "_"));
        forms.push(fragment);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    forms.sort();
    forms.dedup();
    forms
}

/// The stable inside of base64(`offset` unknown bytes + secret + unknown bytes): the
/// characters whose six bits all come from the secret, so they are the same whatever
/// surrounds it. Base64 works in 3-byte groups, so `offset` 0, 1 and 2 cover every
/// position the secret can have in a longer text.
fn base64_fragment(secret: &[u8], offset: usize) -> String {
    let mut input = vec![0u8; offset];
    input.extend_from_slice(secret);
    let encoded = STANDARD_NO_PAD.encode(&input);
    // Character j carries bits 6j..6j+6 of the input; the secret holds bits
    // 8·offset..8·(offset + len).
    let first = (8 * offset).div_ceil(6);
    let end = 8 * input.len() / 6;
    encoded.get(first..end).unwrap_or_default().to_string()
}

/// A header value, and when it carries a scheme (`Bearer ghp_…`, `Basic dXNl…`,
/// `token …`) the credential alone; for `Basic`, also the decoded `user:password` and
/// the password. Any of these can leak without the others.
pub fn header_forms(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_string()];
    let Some((scheme, credential)) = value.trim().split_once(char::is_whitespace) else {
        return forms;
    };
    let credential = credential.trim();
    let is_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !is_scheme || credential.is_empty() {
        return forms;
    }
    forms.push(credential.to_string());
    if scheme.eq_ignore_ascii_case("basic")
        && let Ok(decoded) = STANDARD.decode(credential)
        && let Ok(pair) = String::from_utf8(decoded)
    {
        if let Some((_user, password)) = pair.split_once(':') {
            forms.push(password.to_string());
        }
        forms.push(pair);
    }
    forms
}
