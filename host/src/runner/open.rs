//! Which conversation a runner drives, from seed 001's flags: `--conversation-id ID` is
//! the local conversation `terminal:dm:<ID>` (resumed when it exists), `--resume KEY` a
//! stored one by its key (what `session_id_update` said), `--fork` a new conversation
//! starting with a copy of that one's history (the original is only read), and
//! `--tool-preset` the tools it keeps. `--cwd` is not used — Pincer's tools work in its
//! own workspace (`agent.workspace`) — and a note says so unless it names the workspace.

use pincer_channels::SessionKey;
use pincer_channels::terminal::CHANNEL;

use super::super::{Args, Chat, Core};
use pincer_core::tools::preset::ToolPreset;

/// The conversation, opened.
pub(super) struct Opened {
    pub(crate) chat: Chat,
    /// It existed before (resumed, or the copy of one).
    pub(crate) resuming: bool,
    /// The key it was forked from.
    pub(crate) forked_from: Option<String>,
    /// What the flags asked for that is not done, in sentences for stderr and `ready`.
    pub(crate) notes: Vec<String>,
}

pub(super) async fn open(core: &Core, args: &Args) -> anyhow::Result<Opened> {
    let agent = &core.running.agent;
    let store = agent.store();
    let flags = &args.runner;
    let named = flags
        .conversation_id
        .as_deref()
        .map(local_key)
        .transpose()?;
    let resume = args.session.as_deref().map(local_key).transpose()?;
    let mut forked_from = None;
    let (key, resuming) = if flags.fork {
        let Some(from) = resume.clone().or(named.clone()) else {
            anyhow::bail!(
                "--fork needs the conversation to copy: --resume terminal:dm:<id> or --conversation-id <id>"
            );
        };
        let into = match named {
            Some(named) if named != from => Some(named),
            _ => None,
        };
        let into = fork(store, &from, into).await?;
        forked_from = Some(from);
        (Some(into), true)
    } else {
        let key = resume.or(named);
        let resuming = match &key {
            Some(key) => existing(store, key).await?.is_some(),
            None => false,
        };
        (key, resuming)
    };
    let chat = core.open(key.as_deref(), args.mode).await?;
    if flags.preset != ToolPreset::Full {
        agent.modes().set_preset(chat.session, flags.preset);
    }
    let mut notes = Vec::new();
    if let Some(cwd) = &flags.cwd
        && !same_folder(cwd, &core.workspace)
    {
        notes.push(format!(
            "--cwd {cwd} is not used: Pincer's tools work in its own workspace {} (agent.workspace in config.toml; point it at that folder to work there)",
            core.workspace.display()
        ));
    }
    if !args.ignored.is_empty() {
        notes.push(format!(
            "ignored: {} (see docs/protocols.md, seed 001's flags)",
            args.ignored.join(" ")
        ));
    }
    Ok(Opened {
        chat,
        resuming,
        forked_from,
        notes,
    })
}

/// `terminal:dm:<id>` for a bare id; a key as given when it is a local conversation's.
pub(crate) fn local_key(id: &str) -> anyhow::Result<String> {
    let key = match id.parse::<SessionKey>() {
        Ok(key) => key,
        Err(_) => SessionKey::direct(CHANNEL, id),
    };
    match &key {
        SessionKey::Chat {
            channel,
            group: false,
            thread: None,
            chat_id,
        } if channel == CHANNEL && !chat_id.contains(':') => Ok(key.to_string()),
        _ => anyhow::bail!(
            "{id} is not a local conversation; runners drive conversations named by an id (--conversation-id conv-1) or terminal:dm:<id> (see `pincer sessions list`)"
        ),
    }
}

/// Copy the conversation `from` into `into` (a new `agent-…` one when `None`); the new
/// key. `--fork` here, `--fork-session` under stream-json.
pub(crate) async fn fork(
    store: &pincer_core::store::Store,
    from: &str,
    into: Option<String>,
) -> anyhow::Result<String> {
    let Some(session) = existing(store, from).await? else {
        anyhow::bail!("there is no conversation {from} to fork (see `pincer sessions list`)");
    };
    let into = into
        .unwrap_or_else(|| SessionKey::direct(CHANNEL, &super::super::new_id("agent")).to_string());
    store.fork_session(session, &into).await?;
    Ok(into)
}

/// The stored session of `key`, if it has one.
async fn existing(store: &pincer_core::store::Store, key: &str) -> anyhow::Result<Option<i64>> {
    match store.find_session(key).await {
        Ok(id) => Ok(Some(id)),
        Err(pincer_core::store::StoreError::NoSession(_)) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

fn same_folder(a: &str, b: &std::path::Path) -> bool {
    let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    real(std::path::Path::new(a)) == real(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_local_conversations_and_other_keys_are_refused() {
        assert_eq!(local_key("conv-7").unwrap(), "terminal:dm:conv-7");
        assert_eq!(
            local_key("terminal:dm:agent-1").unwrap(),
            "terminal:dm:agent-1"
        );
        for bad in ["telegram:dm:42", "terminal:group:x", "a:b"] {
            let err = local_key(bad).unwrap_err().to_string();
            assert!(err.contains("not a local conversation"), "{bad}: {err}");
        }
    }
}
