//! Run a fake for benchmarks and for tests of the real `pincer` binary, until SIGTERM or
//! Ctrl-C. Each prints one line first, then serves; scripting goes over `/_fake/*`.
//!
//! - `pincer-fakes model [--port N] [--require-key KEY]` prints `model http://127.0.0.1:PORT`
//! - `pincer-fakes telegram [--port N]` prints `telegram http://127.0.0.1:PORT TOKEN`

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use pincer_fakes::FakeModel;
use pincer_fakes::telegram::FakeTelegram;

const USAGE: &str = "usage: pincer-fakes model [--port N] [--require-key KEY]\n       \
                     pincer-fakes telegram [--port N]";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fake {
    Model,
    Telegram,
}

struct Args {
    fake: Fake,
    port: u16,
    require_key: Option<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let fake = match args.next().as_deref() {
        Some("model") => Fake::Model,
        Some("telegram") => Fake::Telegram,
        _ => return Err("name a fake: `model` or `telegram`".into()),
    };
    let mut parsed = Args {
        fake,
        port: 0,
        require_key: None,
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--port" => {
                parsed.port = value
                    .parse()
                    .map_err(|_| format!("--port wants a number 0-65535, got {value:?}"))?;
            }
            "--require-key" if fake == Fake::Model => parsed.require_key = Some(value),
            _ => return Err(format!("unknown flag {flag:?}")),
        }
    }
    Ok(parsed)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("pincer-fakes: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pincer-fakes: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> std::io::Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    match args.fake {
        Fake::Model => {
            let fake = FakeModel::bind(addr).await?;
            if let Some(key) = &args.require_key {
                fake.require_key(key);
            }
            announce(&format!("model {}", fake.url()))?;
            stopped().await
        }
        Fake::Telegram => {
            let fake = FakeTelegram::bind(addr).await?;
            announce(&format!("telegram {} {}", fake.api_url(), fake.token()))?;
            stopped().await
        }
    }
}

/// The one line a driving test reads to learn where the fake listens.
fn announce(line: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{line}")?;
    stdout.flush()
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
async fn stopped() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
