//! Text to speech for spoken replies (`[voice]`): the reply's text, cut to `max_chars`
//! and stripped of markdown, is read by an OpenAI-compatible `POST {base_url}/audio/speech`
//! (asked for a WAV) or by a local program that writes one, and encoded as OGG/Opus
//! (`ogg_opus`). It only makes audio; the dispatcher decides which replies are spoken
//! and sends them.
//!
//! The text is hostile input (the model wrote it after reading whatever it read): the
//! program is started from its argv list, never through a shell, and gets the text on
//! its standard input (or as exactly one argument where `{text}` stands, with a leading
//! `-` escaped so it cannot read as an option). It runs with a cleared environment
//! (only `PATH`, `HOME` and the locale), so no secret of the gateway reaches it, and is
//! killed after `TIMEOUT`. The provider's key goes only in the request's header; no
//! error text carries it.

use std::process::Stdio;
use std::time::Duration;

use pincer_config::{Config, Secrets, VoiceReply};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use tokio::io::AsyncWriteExt;

use super::ogg_opus::{self, EncodeError, Voice};

/// How long one reading may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The largest WAV accepted from a server or program (30 minutes of 16-bit 24 kHz mono
/// is 86 MB; a reply of `max_chars` is far less).
const MAX_WAV: u64 = 100 << 20;

/// Readings at once, process-wide; the rest wait their turn.
static RUNNING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Who reads the text aloud.
enum Reader {
    Server {
        http: reqwest::Client,
        /// `{base_url}/audio/speech`.
        url: String,
        /// The provider's name, for errors that say which setting to fix.
        provider: String,
        key: Option<SecretString>,
        model: String,
        voice: String,
    },
    /// `[voice] command`, as written.
    Program(Vec<String>),
}

/// Spoken replies as `[voice]` describes them.
pub struct Speaker {
    reader: Reader,
    pub reply: VoiceReply,
    pub max_chars: usize,
}

#[derive(Serialize)]
struct SpeechRequest<'a> {
    model: &'a str,
    input: &'a str,
    voice: &'a str,
    response_format: &'static str,
}

impl Speaker {
    /// The speaker `[voice]` describes, or `None` while it is off.
    pub fn from_config(
        config: &Config,
        secrets: &Secrets,
        env: &[(String, String)],
        http: reqwest::Client,
    ) -> Option<Speaker> {
        let v = &config.voice;
        if !v.is_on() {
            return None;
        }
        let reader = match &v.provider {
            Some(name) => {
                let provider = config.providers.get(name)?;
                Reader::Server {
                    http,
                    url: format!("{}/audio/speech", provider.base_url()),
                    provider: name.clone(),
                    key: secrets
                        .provider_keys(name, provider.kind, env)
                        .into_iter()
                        .next(),
                    model: v.model.clone(),
                    voice: v.voice.clone(),
                }
            }
            None => Reader::Program(v.command.clone()),
        };
        Some(Speaker {
            reader,
            reply: v.reply,
            max_chars: v.max_chars,
        })
    }

    /// What of `text` is read aloud: `text` as speakable, cut to `max_chars`.
    pub fn script(&self, text: &str) -> String {
        cut(&speakable(text), self.max_chars)
    }

    /// `script` read aloud, as a voice message.
    pub async fn speak(&self, script: &str) -> Result<Voice, SpeechError> {
        let _permit = RUNNING.acquire().await.map_err(|_| SpeechError::ShutDown)?;
        let wav = match &self.reader {
            Reader::Server {
                http,
                url,
                provider,
                key,
                model,
                voice,
            } => {
                let body = SpeechRequest {
                    model,
                    input: script,
                    voice,
                    response_format: "wav",
                };
                let mut request = http.post(url).json(&body).timeout(TIMEOUT);
                if let Some(key) = key {
                    request = request.bearer_auth(key.expose_secret());
                }
                from_server(request, provider, model).await?
            }
            Reader::Program(argv) => run(argv, script).await?,
        };
        let encoded = tokio::task::spawn_blocking(move || ogg_opus::encode(&wav))
            .await
            .map_err(|_| SpeechError::ShutDown)??;
        Ok(encoded)
    }
}

async fn from_server(
    request: reqwest::RequestBuilder,
    provider: &str,
    model: &str,
) -> Result<Vec<u8>, SpeechError> {
    let provider = provider.to_string();
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            SpeechError::Timeout
        } else {
            SpeechError::Unreachable {
                provider: provider.clone(),
                why: without_url(&e),
            }
        }
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(match status.as_u16() {
            401 | 403 => SpeechError::KeyRefused { provider },
            404 => SpeechError::NotFound {
                provider,
                model: model.to_string(),
            },
            429 => SpeechError::RateLimited,
            code => SpeechError::Status { provider, code },
        });
    }
    if response.content_length().is_some_and(|n| n > MAX_WAV) {
        return Err(SpeechError::TooBig);
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| SpeechError::Unreachable {
            provider,
            why: without_url(&e),
        })?;
    if bytes.len() as u64 > MAX_WAV {
        return Err(SpeechError::TooBig);
    }
    Ok(bytes.to_vec())
}

/// Run `[voice] command` on `script`: the WAV it wrote at `{out}`.
async fn run(argv: &[String], script: &str) -> Result<Vec<u8>, SpeechError> {
    let dir = tempfile::tempdir().map_err(SpeechError::TempDir)?;
    let out = dir.path().join("speech.wav");
    let out_text = out.to_string_lossy();
    let mut on_stdin = true;
    let args: Vec<String> = argv
        .iter()
        .map(|arg| {
            if arg == "{text}" {
                on_stdin = false;
                escape_dash(script)
            } else {
                arg.replace("{out}", &out_text)
            }
        })
        .collect();
    let Some((program, rest)) = args.split_first() else {
        return Err(SpeechError::NoProgram);
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(rest)
        .env_clear()
        .envs(std::env::vars().filter(|(k, _)| {
            matches!(k.as_str(), "PATH" | "HOME" | "LANG" | "LC_ALL" | "LC_CTYPE")
        }))
        .current_dir(dir.path())
        .stdin(if on_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| SpeechError::Spawn {
        program: program.clone(),
        source,
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A program that stops reading early (or does not read) is judged by its exit.
        let _ = stdin.write_all(script.as_bytes()).await;
        drop(stdin);
    }
    let output = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| SpeechError::Timeout)?
        .map_err(|source| SpeechError::Spawn {
            program: program.clone(),
            source,
        })?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let said: String = said.trim().chars().take(300).collect();
        return Err(SpeechError::ProgramFailed {
            program: program.clone(),
            status: output.status.to_string(),
            said,
        });
    }
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    if size > MAX_WAV {
        return Err(SpeechError::TooBig);
    }
    std::fs::read(&out).map_err(|_| SpeechError::NoWav {
        program: program.clone(),
    })
}

/// One argument that cannot read as an option.
fn escape_dash(text: &str) -> String {
    if text.starts_with('-') {
        format!(" {text}")
    } else {
        text.to_string()
    }
}

/// `text` as it should be read: markdown's marks, fenced code and link targets left out.
pub fn speakable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let line = line.trim_start_matches(['#', '>', ' ']);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                // A link reads as its text: `[text](url)` → "text".
                ']' if chars.peek() == Some(&'(') => {
                    for c in chars.by_ref() {
                        if c == ')' {
                            break;
                        }
                    }
                }
                '*' | '_' | '`' | '~' | '[' | ']' => {}
                c => out.push(c),
            }
        }
        out.push('\n');
    }
    out.trim().to_string()
}

/// `text` cut to at most `max` characters, at the last sentence end, else the last
/// space, before the limit.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    let at = head
        .rfind(['.', '!', '?', '\n'])
        .map(|i| i + 1)
        .filter(|&i| i > max / 2)
        .or_else(|| head.rfind(' '))
        .unwrap_or(head.len());
    head[..at].trim_end().to_string()
}

/// Why a reply was not spoken; each names the setting to check.
#[derive(Debug, thiserror::Error)]
pub enum SpeechError {
    #[error("speech is shut down")]
    ShutDown,
    #[error("the speech server did not answer in {}s", TIMEOUT.as_secs())]
    Timeout,
    /// `why` is reqwest's words without the URL.
    #[error("cannot reach the speech server ([providers.{provider}] base_url): {why}")]
    Unreachable { provider: String, why: String },
    #[error("the speech server refused the key: check providers.{provider} in .security.yml")]
    KeyRefused { provider: String },
    #[error(
        "the speech server has no /audio/speech or no model \"{model}\": check [voice] model and providers.{provider}.base_url"
    )]
    NotFound { provider: String, model: String },
    #[error("the speech server is rate limiting; try again in a minute")]
    RateLimited,
    #[error("the speech server ([providers.{provider}]) answered HTTP {code}")]
    Status { provider: String, code: u16 },
    #[error("the speech audio is larger than {} MB", MAX_WAV >> 20)]
    TooBig,
    #[error("cannot make a temporary folder for the speech command: {0}")]
    TempDir(std::io::Error),
    #[error("[voice] command is empty")]
    NoProgram,
    #[error("cannot run [voice] command \"{program}\": {source}; install it or fix the path")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("[voice] command \"{program}\" failed ({status}): {said}")]
    ProgramFailed {
        program: String,
        status: String,
        said: String,
    },
    #[error("[voice] command \"{program}\" wrote no WAV at {{out}}; check its arguments")]
    NoWav { program: String },
    #[error(transparent)]
    Encode(#[from] EncodeError),
}

/// A reqwest error's text without its URL (which may carry a query someone put a key in).
fn without_url(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(url.as_str(), "…");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_marks_and_code_are_not_read() {
        let text =
            "# Plan\n**Water** the _basil_ ([how](https://x.y/a)).\n```\nrm -rf /\n```\n> `done`";
        assert_eq!(speakable(text), "Plan\nWater the basil (how).\ndone");
    }

    #[test]
    fn a_long_text_is_cut_at_a_sentence_or_word() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("One two. Three four five.", 12), "One two.");
        assert_eq!(cut("alpha beta gamma", 12), "alpha beta");
        assert!(cut(&"é".repeat(50), 10).chars().count() <= 10);
    }

    #[test]
    fn a_text_argument_never_reads_as_an_option() {
        assert_eq!(escape_dash("-w /etc/x"), " -w /etc/x");
        assert_eq!(escape_dash("hello"), "hello");
    }

    #[tokio::test]
    async fn the_program_gets_the_text_on_stdin_and_no_shell() {
        // `sh -c 'cat > "$0"' {out}`: the program the config names runs with argv only;
        // the text (shell-hostile) arrives on stdin and becomes the "WAV" verbatim.
        let argv = ["sh", "-c", "cat > \"$0\"", "{out}"].map(String::from);
        let hostile = "$(touch /tmp/pwned-by-speech); `id`";
        let wav = run(&argv, hostile).await.unwrap();
        assert_eq!(wav, hostile.as_bytes());
    }

    #[tokio::test]
    async fn a_failing_program_is_named_with_what_it_said() {
        let argv = ["sh", "-c", "echo no voice >&2; exit 3", "{out}"].map(String::from);
        let err = run(&argv, "hi").await.unwrap_err().to_string();
        assert!(
            err.contains("\"sh\" failed") && err.contains("no voice"),
            "{err}"
        );
        let argv = ["true", "{out}"].map(String::from);
        let err = run(&argv, "hi").await.unwrap_err().to_string();
        assert!(err.contains("wrote no WAV"), "{err}");
    }
}
