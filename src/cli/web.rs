//! `pincer web token | url`: the web panel's login. `token` makes a new `web.token` in
//! `.security.yml` (logging out every browser at the gateway's next start) and prints
//! the link; `url` prints the login link for the current one.

use std::process::ExitCode;

use super::load;
use crate::home::Home;
use crate::web::token;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Make a new login token (the old link stops working once the gateway restarts)
    Token,
    /// Print the login link: open it in a browser to use the panel
    Url,
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    let (config, secrets) = load(home)?;
    let listen = &config.web.listen;
    let token = match command {
        Command::Token => {
            let token = token::rotate(&home.security_file)?;
            eprintln!(
                "Wrote a new web.token to {}; restart the gateway (`pincer run`) for it to take effect.",
                home.security_file.display()
            );
            token
        }
        Command::Url => match secrets.web.token {
            Some(token) => token,
            None => anyhow::bail!(
                "there is no web.token in {} yet; run `pincer web token` to make one",
                home.security_file.display()
            ),
        },
    };
    println!("{}", token::url(listen, &token));
    if !config.web.enabled {
        eprintln!(
            "note: the panel is off; set [web] enabled = true in {} and restart `pincer run`",
            home.config_file.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
