//! Tests of the scrubber: token shapes, secret values and their transformed forms, and
//! scrubbing a stream in pieces.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

use super::*;

/// A secret of no known token shape, so only the value (and its forms) can catch it.
const SECRET: &str = "pw-7Hq2xLz9Vb4Nc8Rt1Kd5";

fn scrubber(secrets: &[&str]) -> Scrubber {
    Scrubber::new(secrets.iter().map(|s| s.to_string()).collect())
}

#[test]
fn every_known_token_shape_and_loaded_secret_is_redacted() {
    let scrubber = Scrubber::new(vec!["my-own-long-password".into(), "short".into()]);
    let samples = [
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
        "sk-ant-api03-abcdefghijklmnopqrstuvwx",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "xoxb-1234567890-abcdefghij",
        "xapp-1-A0123456789-abcdef",
        "123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
        "my-own-long-password",
    ];
    for secret in samples {
        let text = format!("the key is {secret}, keep it safe");
        let clean = scrubber.scrub(&text);
        assert_eq!(
            clean,
            format!("the key is {REDACTED}, keep it safe"),
            "{secret}"
        );
    }
    assert_eq!(
        scrubber.scrub("a short word and sk-not"),
        "a short word and sk-not"
    );
}

/// `engine`'s encoding of `before + secret + after`, with the characters that carry
/// only the secret's bits replaced by one `REDACTED`. Which characters those are is
/// found by experiment, not by the scrubber's arithmetic: they change when the
/// secret's bits are flipped and stay when the neighbours' bits are.
fn encoded_and_redacted(
    engine: &impl Engine,
    before: &[u8],
    secret: &[u8],
    after: &[u8],
) -> (String, String) {
    let flip = |bytes: &[u8]| bytes.iter().map(|b| !b).collect::<Vec<u8>>();
    let encode = |b: &[u8], s: &[u8], a: &[u8]| engine.encode([b, s, a].concat());
    let text = encode(before, secret, after);
    let other_secret = encode(before, &flip(secret), after);
    let other_neighbours = encode(&flip(before), secret, &flip(after));
    let only_secret: Vec<usize> = (0..text.len())
        .filter(|&i| {
            text.as_bytes()[i] != other_secret.as_bytes()[i]
                && text.as_bytes()[i] == other_neighbours.as_bytes()[i]
        })
        .collect();
    let (first, last) = (only_secret[0], only_secret[only_secret.len() - 1]);
    assert_eq!(only_secret.len(), last - first + 1);
    let redacted = format!("{}{REDACTED}{}", &text[..first], &text[last + 1..]);
    (text, redacted)
}

/// A secret whose base64 has `+` and `/` at every alignment: URL-safe base64 differs.
const SYMBOLS: &str = "key~>?~>?~pw7Hq2x>?";

#[test]
fn base64_of_a_secret_is_caught_at_each_of_the_three_alignments() {
    let scrubber = scrubber(&[SECRET, SYMBOLS]);
    for secret in [SECRET, SYMBOLS] {
        for before in ["", "a", "ab", "abc", "abcd", "abcde"] {
            for after in ["!", "xy", "xyz"] {
                for engine in [&STANDARD, &URL_SAFE] {
                    let (text, redacted) = encoded_and_redacted(
                        engine,
                        before.as_bytes(),
                        secret.as_bytes(),
                        after.as_bytes(),
                    );
                    assert_eq!(scrubber.scrub(&text), redacted, "{before:?} {after:?}");
                }
            }
        }
    }
}

#[test]
fn base64_of_a_whole_secrets_file_is_caught_wrapped_or_not() {
    let scrubber = scrubber(&[SECRET]);
    // Key names of three lengths put the secret at each alignment.
    for key in ["api_key", "api_keys", "api_keyss"] {
        let yaml = format!("providers:\n  openai:\n    {key}: {SECRET}\n    timeout: 30\n");
        let (before, after) = yaml.split_once(SECRET).unwrap();
        let (one_line, redacted) = encoded_and_redacted(
            &STANDARD,
            before.as_bytes(),
            SECRET.as_bytes(),
            after.as_bytes(),
        );
        assert_eq!(one_line, STANDARD.encode(&yaml));
        // `base64 -w0`
        assert_eq!(scrubber.scrub(&one_line), redacted, "{key}");
        // `base64` (76 columns) and a wrap that falls inside the secret's part
        for width in [76, 20] {
            let wrapped = wrap(&one_line, width);
            let clean = scrubber.scrub(&wrapped);
            assert_eq!(clean.replace('\n', ""), redacted, "{key} at {width}");
        }
    }
}

fn wrap(text: &str, width: usize) -> String {
    let lines: Vec<&str> = text
        .as_bytes()
        .chunks(width)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    lines.join("\n") + "\n"
}

#[test]
fn hex_in_either_case_and_the_reversed_secret_are_caught() {
    let scrubber = scrubber(&[SECRET]);
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    let reversed: String = SECRET.chars().rev().collect();
    for form in [hex.clone(), hex.to_uppercase(), reversed] {
        let text = format!("out: {form} done");
        assert_eq!(
            scrubber.scrub(&text),
            format!("out: {REDACTED} done"),
            "{form}"
        );
    }
    // `xxd -p` wraps hex at 60 columns.
    let dump = wrap(&format!("0a{hex}0a"), 60);
    assert!(scrubber.scrub(&dump).contains(REDACTED), "{dump}");
    assert!(!scrubber.scrub(&dump).replace('\n', "").contains(&hex[..20]));
}

#[test]
fn a_header_secret_is_caught_with_or_without_its_scheme() {
    let secrets: Vec<String> = ["Bearer mcp-0123456789abcdef", "Basic dXNlcjpwYXNz"]
        .iter()
        .flat_map(|v| header_forms(v))
        .collect();
    let scrubber = Scrubber::new(secrets);
    for leak in [
        "Bearer mcp-0123456789abcdef",
        "mcp-0123456789abcdef",
        "Basic dXNlcjpwYXNz",
        "dXNlcjpwYXNz",
        "user:pass",
    ] {
        let text = format!("header was {leak}.");
        assert_eq!(
            scrubber.scrub(&text),
            format!("header was {REDACTED}."),
            "{leak}"
        );
    }
    // The scheme alone is no secret.
    assert_eq!(
        scrubber.scrub("use Bearer or Basic auth"),
        "use Bearer or Basic auth"
    );
}

#[test]
fn ordinary_text_is_left_alone() {
    let scrubber = scrubber(&[SECRET, "correct horse battery staple", "0123456789abcdef"]);
    let texts = [
        "Here is the plan: read the file, count the lines, and report back.".to_string(),
        STANDARD.encode("a config file with nothing secret in it at all, honestly"),
        "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
        "horse correct, staple battery; 0123456789 abcdef".into(),
    ];
    for text in texts {
        assert!(matches!(scrubber.scrub(&text), Cow::Borrowed(_)), "{text}");
    }
}

#[test]
fn secrets_shorter_than_the_minimum_are_not_scrubbed_in_any_form() {
    let short = "abc1234";
    let scrubber = scrubber(&[short]);
    let hex: String = short.bytes().map(|b| format!("{b:02x}")).collect();
    let reversed: String = short.chars().rev().collect();
    for form in [short.to_string(), STANDARD.encode(short), hex, reversed] {
        let text = format!("value {form} here");
        assert_eq!(scrubber.scrub(&text), text);
    }
}

#[test]
fn every_derived_fragment_is_long_enough_to_mean_something() {
    for len in MIN_SECRET_LEN..40 {
        let secret: String = "k7".repeat(len).chars().take(len).collect();
        for form in forms::encoded(&secret) {
            assert!(form.len() >= forms::MIN_FRAGMENT_LEN, "{secret}: {form}");
        }
    }
}

/// Feed `pieces` through a stream scrubber: what it released, in order.
fn streamed(scrubber: &Arc<Scrubber>, pieces: &[&str]) -> String {
    let mut stream = StreamScrubber::new(Arc::clone(scrubber));
    let mut out = String::new();
    for piece in pieces {
        out.push_str(&stream.push(piece));
    }
    out + stream.finish().as_str()
}

/// A secret with spaces in it, ending where a stream may be cut.
const PHRASE: &str = "correct horse battery staple!";

/// Texts where a secret (or a token shape) can be split across pieces, each followed by
/// enough text that the stream may cut anywhere inside it.
fn stream_cases() -> Vec<String> {
    let base64 = wrap(&STANDARD.encode(format!("key: {SECRET}\n")), 12);
    let tail = "and that is all there is to say about it, for now at least.";
    [
        format!("Your key is {SECRET}, keep it."),
        format!("a phrase: {PHRASE} and twice: {PHRASE}{PHRASE}"),
        "token sk-proj-abcdefghijklmnopqrstuvwxyz0123 and xéAKIAIOSFODNN7EXAMPLE".into(),
        format!("ünïcode {SECRET}→done"),
        format!("file:\n{base64}end"),
    ]
    .map(|case| format!("{case} {tail}"))
    .into()
}

#[test]
fn a_secret_split_across_two_pieces_never_comes_out() {
    let scrubber = Arc::new(scrubber(&[SECRET, PHRASE]));
    for text in stream_cases() {
        let whole = scrubber.scrub(&text).into_owned();
        for (at, _) in text.char_indices().skip(1) {
            let out = streamed(&scrubber, &[&text[..at], &text[at..]]);
            assert!(!out.contains(SECRET), "{text:?} cut at {at}: {out}");
            assert_eq!(out, whole, "{text:?} cut at {at}");
        }
    }
}

#[test]
fn a_token_split_across_pieces_is_caught_with_no_secrets_loaded() {
    // Nothing to hold back for literals: only the cut rule keeps a token whole.
    let scrubber = Arc::new(scrubber(&[]));
    for text in stream_cases() {
        let whole = scrubber.scrub(&text).into_owned();
        for (at, _) in text.char_indices().skip(1) {
            let out = streamed(&scrubber, &[&text[..at], &text[at..]]);
            assert_eq!(out, whole, "{text:?} cut at {at}");
        }
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(streamed(&scrubber, &pieces), whole, "{text:?}");
    }
}

#[test]
fn a_secret_split_across_three_pieces_never_comes_out() {
    let scrubber = Arc::new(scrubber(&[SECRET, PHRASE]));
    for text in stream_cases() {
        let whole = scrubber.scrub(&text).into_owned();
        let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
        for (n, &a) in cuts.iter().enumerate() {
            // The middle piece no longer than a secret: cut twice inside one.
            for &b in cuts[n..].iter().take_while(|&&b| b - a <= 32) {
                let out = streamed(&scrubber, &[&text[..a], &text[a..b], &text[b..]]);
                assert_eq!(out, whole, "{text:?} cut at {a} and {b}");
            }
        }
    }
}

#[test]
fn a_stream_one_character_at_a_time_equals_the_whole_text_scrubbed() {
    let scrubber = Arc::new(scrubber(&[SECRET, PHRASE]));
    for text in stream_cases() {
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(
            streamed(&scrubber, &pieces),
            scrubber.scrub(&text),
            "{text:?}"
        );
    }
}

#[test]
fn a_stream_holds_back_only_what_may_begin_a_secret() {
    let scrubber = Arc::new(scrubber(&[SECRET, PHRASE]));
    let text = "the quick brown fox jumps over the lazy dog ".repeat(20);
    let mut stream = StreamScrubber::new(Arc::clone(&scrubber));
    let (mut pushed, mut released) = (0, String::new());
    for word in text.split_inclusive(' ') {
        pushed += word.len();
        released.push_str(&stream.push(word));
        // Held back: the last word, which could grow into a token.
        assert!(pushed - released.len() <= word.len(), "{released:?}");
    }
    assert!(text.starts_with(&released));
    assert_eq!(released + stream.finish().as_str(), text);
    // Text that may be the start of a secret waits for what follows.
    let mut stream = StreamScrubber::new(Arc::clone(&scrubber));
    assert_eq!(
        stream.push("the phrase is: correct horse "),
        "the phrase is: "
    );
    assert_eq!(stream.push("and pony"), "correct horse and ");
}

#[test]
fn a_discarded_stream_forgets_what_it_held_back() {
    let scrubber = Arc::new(scrubber(&[SECRET]));
    let mut stream = StreamScrubber::new(Arc::clone(&scrubber));
    stream.push("abandoned reply");
    stream.discard();
    assert_eq!(stream.push("fresh") + stream.finish().as_str(), "fresh");
}

/// Tool-call arguments are judged as the tool will read them: a secret with a quote or
/// a backslash in it (escaped in the JSON text), or percent-encoded in a URL, is found.
#[test]
fn secrets_in_arguments_are_found_as_the_tool_reads_them() {
    let s = scrubber(&[
        "hunter2\\Xyz-longpass",
        "quote\"InsideSecret99",
        "web-token-Zq81kLmN0pQr5tUv9wXy2",
    ]);
    for args in [
        serde_json::json!({"command": "echo 'hunter2\\Xyz-longpass' > leak"}),
        serde_json::json!({"command": "echo 'quote\"InsideSecret99'"}),
        serde_json::json!({"url": "https://x.example/?t=%77eb-token-Zq81kLmN0pQr5tUv9wXy2"}),
        serde_json::json!({"items": [{"text": "web-token-Zq81kLmN0pQr5tUv9wXy2"}]}),
        serde_json::json!({"web-token-Zq81kLmN0pQr5tUv9wXy2": 1}),
    ] {
        assert!(s.in_arguments(&args), "{args}");
        let clean = s.scrub_arguments(&args).unwrap().to_string();
        for secret in ["hunter2", "InsideSecret99", "Zq81kLmN0pQr5tUv9wXy2"] {
            assert!(!clean.contains(secret), "{clean}");
        }
    }
    assert!(!s.in_arguments(&serde_json::json!({"command": "echo 100% fine"})));
}

#[test]
fn a_secret_typed_loosely_is_still_found() {
    let scrubber = Scrubber::new(vec!["sk-proj-REDTEAMSECRET0123456789abcdef".to_string()]);
    for typed in [
        "REDTEAMSECRET0123456789abcdef",
        "sk-proj-REDTEAM\u{200b}SECRET0123456789abcdef",
        "SK-PROJ-REDTEAMSECRET0123456789ABCDEF",
        "s k - p r o j - R E D T E A M S E C R E T 0 1 2 3",
        "the key is redteam-secret-0123-4567",
    ] {
        assert!(scrubber.carries_loosely(typed), "{typed}");
    }
    for typed in ["blue", "sk-proj-", "REDTEAM", "my project secret"] {
        assert!(!scrubber.carries_loosely(typed), "{typed}");
    }
}
