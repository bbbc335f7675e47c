//! read_file: a workspace file's lines, numbered, read as a stream. Only the lines
//! asked for are kept in memory. A file up to `MAX_READ_BYTES` is read through so the
//! note can say how many lines it has; a bigger one is read only up to the last line
//! asked for and never past the cap, and the note says so.

use crate::tools::Effects;
use std::io::{BufRead, BufReader, Read};
use std::num::NonZeroUsize;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Rel, ToolContext, ToolError, TypedTool, blocking};
use crate::tools::confine::{Access, Opened, io_error, open_file};

/// Lines read_file returns when the model gives no limit.
const DEFAULT_READ_LINES: usize = 2000;
/// The most of a file read_file reads.
pub(super) const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;
/// The most of one line kept; the rest of a longer line is skipped.
const MAX_LINE_BYTES: usize = 1024 * 1024;
const MB: f64 = 1024.0 * 1024.0;

pub(super) struct ReadFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadFileArgs {
    /// path relative to the workspace
    path: String,
    offset: Option<NonZeroUsize>,
    limit: Option<NonZeroUsize>,
}

#[async_trait]
impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Read a text file in the workspace. Lines come numbered; use offset (1-based first line) and limit for long files.".into()
    }

    async fn run(&self, args: ReadFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let rel = Rel::parse(&args.path)?;
        let offset = args.offset.map_or(1, NonZeroUsize::get);
        let limit = args.limit.map_or(DEFAULT_READ_LINES, NonZeroUsize::get);
        let workspace = ctx.workspace.clone();
        let caller = ctx.caller.clone();
        blocking("read_file", move || {
            let root = crate::tools::confine::root(&workspace)?;
            let opened = open_file(&root, &rel, Access::Read)?;
            super::check_reached(
                &caller,
                "read_file",
                &root,
                &rel,
                std::os::fd::AsFd::as_fd(&opened.file),
            )?;
            numbered(opened, rel.given(), offset, limit)
        })
        .await
    }
}

/// Lines `offset..offset + limit` of the file, numbered, with a note on the rest.
fn numbered(opened: Opened, rel: &str, offset: usize, limit: usize) -> Result<String, ToolError> {
    let big = opened.size > MAX_READ_BYTES;
    let last_wanted = (offset - 1).saturating_add(limit);
    let mut reader = BufReader::with_capacity(64 * 1024, opened.file.take(MAX_READ_BYTES));
    let mut line = Vec::new();
    let mut out = String::new();
    let mut total = 0;
    let mut stopped_early = false;
    while let Some(read) =
        next_line(&mut reader, &mut line).map_err(|e| io_error("read", rel, e))?
    {
        if !read.ended && big {
            break; // cut by the cap mid-line: not a whole line
        }
        total += 1;
        if total >= offset && total <= last_wanted {
            let text = match std::str::from_utf8(&line) {
                Ok(text) => text,
                // A long line cut inside a character: show it up to there.
                Err(err) if read.long && err.error_len().is_none() => {
                    std::str::from_utf8(&line[..err.valid_up_to()]).unwrap_or_default()
                }
                Err(_) => return Err(not_text(rel)),
            };
            out.push_str(&format!("{total:>6}\t{text}"));
            if read.long {
                out.push_str(" [… line cut at 1 MB]");
            }
            out.push('\n');
        } else if !read.long && std::str::from_utf8(&line).is_err() {
            return Err(not_text(rel));
        }
        if big && total >= last_wanted {
            stopped_early = true;
            break;
        }
    }
    let size_mb = opened.size as f64 / MB;
    if big && stopped_early {
        out.push_str(&format!(
            "[lines {offset}-{total} of a {size_mb:.0} MB file (read_file stops at the lines asked for in files over {} MB); use offset={} to read on]\n",
            MAX_READ_BYTES / 1024 / 1024,
            total + 1
        ));
    } else if big {
        out.push_str(&format!(
            "[read_file reads only the first {} MB of this {size_mb:.0} MB file ({total} lines); use exec (e.g. `tail -n +{}`) for the rest]\n",
            MAX_READ_BYTES / 1024 / 1024,
            total + 1
        ));
    } else {
        let shown_end = last_wanted.min(total);
        if shown_end < total {
            out.push_str(&format!(
                "[lines {offset}-{shown_end} of {total}; use offset={} to read on]\n",
                shown_end + 1
            ));
        }
        if total == 0 {
            out.push_str("[empty file]\n");
        }
    }
    Ok(out)
}

fn not_text(rel: &str) -> ToolError {
    ToolError::new(format!("`{rel}` is not a UTF-8 text file"))
}

/// How a line read by `next_line` ended.
struct LineRead {
    /// With a newline (else at the end of the input).
    ended: bool,
    /// Longer than `MAX_LINE_BYTES`: only that much was kept.
    long: bool,
}

/// Read the next line into `line` without its ending (`\n` or `\r\n`), keeping at most
/// `MAX_LINE_BYTES` of it; none at the end of the input.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<LineRead>> {
    line.clear();
    let mut long = false;
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buf.is_empty() {
            return Ok(any.then_some(LineRead { ended: false, long }));
        }
        any = true;
        let (chunk, used, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], at + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = MAX_LINE_BYTES - line.len();
        long |= chunk.len() > room;
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reader.consume(used);
        if ended {
            if !long && line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(LineRead { ended, long }));
        }
    }
}
