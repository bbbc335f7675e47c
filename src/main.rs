//! The `pincer` command: parse the arguments and hand them to `pincer::cli`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    pincer::cli::main(pincer::cli::Cli::parse())
}
