//! write_file and edit_file. The target is opened beneath the workspace without
//! truncating, checked (a regular file with one link, not one of the prompt's files),
//! and only then changed. A new file is made with `O_EXCL | O_NOFOLLOW` in its folder,
//! itself opened beneath, and missing folders are made beneath too (`Root::make_parents`).

use crate::tools::Effects;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;

use async_trait::async_trait;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Rel, Root, ToolContext, ToolError, TypedTool, blocking};
use crate::tools::confine::prompt::{self, Target};
use crate::tools::confine::{Access, io_error, open_dir, open_file, refuse, regular};

/// The largest file edit_file takes (it holds the whole file, twice).
pub(super) const MAX_EDIT_BYTES: u64 = 10 * 1024 * 1024;
/// Permissions of a new file before the umask, as `File::create` uses.
const NEW_FILE_MODE: Mode = Mode::from_raw_mode(0o666);

pub(super) struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteFileArgs {
    path: String,
    content: String,
}

#[async_trait]
impl TypedTool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = "write_file";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::WRITES_WORKSPACE)
        .union(Effects::REPLACES_FILES)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Create or overwrite a file in the workspace with the given content (parent folders are created).".into()
    }

    async fn run(&self, args: WriteFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = Rel::parse(&args.path)?;
        let content = args.content;
        prompt::refuse_by_name(&rel)?;
        let workspace = ctx.workspace.clone();
        blocking("write_file", move || {
            write(&workspace, &rel, content.as_bytes())?;
            Ok(format!("wrote {} bytes to {}", content.len(), rel.path()))
        })
        .await
    }
}

fn write(workspace: &Path, rel: &Rel, content: &[u8]) -> Result<(), ToolError> {
    let root = crate::tools::confine::root(workspace)?;
    let Some((parent, name)) = rel.split_last() else {
        return Err(ToolError::new(format!(
            "`{}` is a folder, not a file",
            rel.given()
        )));
    };
    refuse_growth(&root, rel)?;
    root.make_parents(rel, pincer_confine::Follow::Inside)
        .map_err(|err| refuse(rel, "create the folder for", err))?;
    let mut file = match root.open_at(rel, Access::Write.flags(), Mode::empty()) {
        Ok(fd) => existing(&root, rel, fd)?,
        Err(Errno::NOENT) => {
            let dir = open_dir(&root, &parent)?;
            prompt::refuse_reached(
                &root,
                rel,
                &Target::New {
                    dir: dir.as_fd(),
                    name,
                },
            )?;
            let flags = Access::Write.flags() | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
            match rustix::fs::openat(&dir, name, flags, NEW_FILE_MODE) {
                Ok(fd) => File::from(fd),
                // A dangling symlink (or a file made meanwhile): follow it, beneath.
                Err(Errno::EXIST) => {
                    let flags = Access::Write.flags() | OFlags::CREATE;
                    let fd = root
                        .open_at(rel, flags, NEW_FILE_MODE)
                        .map_err(|err| refuse(rel, "write", err))?;
                    existing(&root, rel, fd)?
                }
                Err(err) => return Err(refuse(rel, "write", err)),
            }
        }
        Err(err) => return Err(refuse(rel, "write", err)),
    };
    file.write_all(content)
        .map_err(|err| io_error("write", rel.given(), err))
}

/// An existing file opened for writing: checked, then emptied.
fn existing(root: &Root, rel: &Rel, fd: OwnedFd) -> Result<File, ToolError> {
    let opened = regular(rel, fd)?;
    prompt::refuse_reached(root, rel, &Target::File(&opened))?;
    opened
        .file
        .set_len(0)
        .map_err(|err| io_error("write", rel.given(), err))?;
    Ok(opened.file)
}

/// Before any folder is made: refuse when the deepest folder that exists on the way
/// is really a prompt folder (or skills/ reached through a symlink).
fn refuse_growth(root: &Root, rel: &Rel) -> Result<(), ToolError> {
    let mut path = rel.clone();
    while let Some((parent, name)) = path.split_last() {
        if let Ok(dir) = open_dir(root, &parent) {
            return prompt::refuse_reached(
                root,
                rel,
                &Target::New {
                    dir: dir.as_fd(),
                    name,
                },
            );
        }
        path = parent;
    }
    Ok(())
}

pub(super) struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EditFileArgs {
    path: String,
    old_text: String,
    new_text: String,
}

#[async_trait]
impl TypedTool for EditFile {
    type Args = EditFileArgs;
    const NAME: &'static str = "edit_file";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::WRITES_WORKSPACE)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Replace exactly one occurrence of old_text with new_text in a workspace file. old_text must match exactly once; include surrounding lines to make it unique.".into()
    }

    fn validate(&self, args: &EditFileArgs) -> Result<(), ToolError> {
        if args.old_text.is_empty() {
            return Err(ToolError::new(
                "old_text is empty; give the exact text to replace",
            ));
        }
        if args.old_text == args.new_text {
            return Err(ToolError::new(
                "old_text and new_text are the same; nothing would change",
            ));
        }
        Ok(())
    }

    async fn run(&self, args: EditFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = Rel::parse(&args.path)?;
        prompt::refuse_by_name(&rel)?;
        let workspace = ctx.workspace.clone();
        blocking("edit_file", move || {
            edit(&workspace, &rel, &args.old_text, &args.new_text)
        })
        .await
    }
}

fn edit(workspace: &Path, rel: &Rel, old: &str, new: &str) -> Result<String, ToolError> {
    let given = rel.given();
    let root = crate::tools::confine::root(workspace)?;
    let opened = open_file(&root, rel, Access::Update)?;
    prompt::refuse_reached(&root, rel, &Target::File(&opened))?;
    let too_big = |size: u64| {
        ToolError::new(format!(
            "`{given}` is {:.1} MB; edit_file edits files up to {} MB, so change this one with exec (e.g. `sed -i`)",
            size as f64 / 1024.0 / 1024.0,
            MAX_EDIT_BYTES / 1024 / 1024
        ))
    };
    if opened.size > MAX_EDIT_BYTES {
        return Err(too_big(opened.size));
    }
    let mut bytes = Vec::new();
    (&opened.file)
        .take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| io_error("read", given, err))?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::new(format!("`{given}` is not a UTF-8 text file")))?;
    match text.matches(old).count() {
        0 => Err(ToolError::new(format!(
            "old_text was not found in `{given}`; read_file it and copy the text exactly"
        ))),
        1 => {
            let updated = text.replacen(old, new, 1);
            opened
                .file
                .write_all_at(updated.as_bytes(), 0)
                .and_then(|()| opened.file.set_len(updated.len() as u64))
                .map_err(|err| io_error("write", given, err))?;
            Ok(format!("edited {}", rel.path()))
        }
        n => Err(ToolError::new(format!(
            "old_text matches {n} places in `{given}`; include more surrounding text so it matches once"
        ))),
    }
}
