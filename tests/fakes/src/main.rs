//! `pincer-fakes model [--port N] [--require-key KEY]`: run the fake model server for
//! benchmarks and for tests of the real `pincer` binary. Prints `model http://127.0.0.1:PORT`
//! on one line, then serves until SIGTERM or Ctrl-C. Scripting goes over `/_fake/*`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use pincer_fakes::FakeModel;

const USAGE: &str = "usage: pincer-fakes model [--port N] [--require-key KEY]";

struct Args {
    port: u16,
    require_key: Option<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    if args.next().as_deref() != Some("model") {
        return Err("the only fake is `model`".into());
    }
    let mut parsed = Args {
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
            "--require-key" => parsed.require_key = Some(value),
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
    let fake = FakeModel::bind(SocketAddr::from(([127, 0, 0, 1], args.port))).await?;
    if let Some(key) = &args.require_key {
        fake.require_key(key);
    }
    let mut stdout = std::io::stdout();
    writeln!(stdout, "model {}", fake.url())?;
    stdout.flush()?;
    stopped().await
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
