//! Skills: `workspace/skills/<name>/SKILL.md`, each with a frontmatter `name` and
//! `description`. Only the names and descriptions go into the system prompt; the body
//! is loaded when the model asks for it with the `skill` tool. Each file is opened
//! beneath the workspace: a link a command planted cannot make the prompt or the tool
//! read a file outside it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effects, Tool, ToolContext, ToolError, TypedTool};

/// The most skills listed in the prompt.
const MAX_SKILLS: usize = 50;
/// The most of a SKILL.md that is read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
}

/// The skills in a workspace, by name. A SKILL.md without a description is skipped
/// with a warning (the model could not know when to use it).
pub fn list(workspace: &Path) -> Vec<Skill> {
    // Listed and read beneath the workspace with no link followed: a `skills` (or a
    // skill's folder) that is a link, which a command could plant, is not followed.
    let entries = pincer_confine::Root::open(workspace)
        .ok()
        .and_then(|root| {
            let rel = pincer_confine::Rel::plain("skills").ok()?;
            pincer_confine::gateway::Folder::open(&root, &rel).ok()?
        })
        .and_then(|folder| folder.entries().ok())
        .unwrap_or_default();
    let mut skills: Vec<Skill> = entries
        .into_iter()
        .filter(|(_, kind)| *kind == pincer_confine::FileType::Directory)
        .filter_map(|(dir, _)| {
            let path = workspace.join("skills").join(&dir).join("SKILL.md");
            let rel = format!("skills/{dir}/SKILL.md");
            let text = super::confine::read_beneath(workspace, &rel, MAX_SKILL_BYTES).ok()?;
            let (name, description) = frontmatter(&text);
            let name = name.unwrap_or(dir);
            match description {
                Some(description) => Some(Skill {
                    name,
                    description,
                    path,
                }),
                None => {
                    tracing::warn!(
                        "{} has no `description:` in its frontmatter; skipped",
                        path.display()
                    );
                    None
                }
            }
        })
        .collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills.truncate(MAX_SKILLS);
    skills
}

/// `name` and `description` from a leading `---` block.
fn frontmatter(text: &str) -> (Option<String>, Option<String>) {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return (None, None);
    }
    let (mut name, mut description) = (None, None);
    for line in lines {
        if line.trim() == "---" {
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim().trim_matches('"').to_string();
            match key.trim() {
                "name" if !value.is_empty() => name = Some(value),
                "description" if !value.is_empty() => description = Some(value),
                _ => {}
            }
        }
    }
    (name, description)
}

/// The body of a SKILL.md, without its frontmatter.
fn body(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---") else {
        return text;
    };
    match rest.find("\n---") {
        Some(end) => rest[end + 4..].trim_start_matches(['\r', '\n']),
        None => text,
    }
}

pub fn tool() -> Arc<dyn Tool> {
    Arc::new(SkillTool)
}

struct SkillTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    name: String,
}

#[async_trait]
impl TypedTool for SkillTool {
    type Args = SkillArgs;
    const NAME: &'static str = "skill";
    const EFFECTS: Effects = Effects::READS_WORKSPACE
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);

    fn description(&self) -> String {
        "Load the instructions of one of the skills listed in the system prompt, by name.".into()
    }

    async fn run(&self, args: SkillArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let name = args.name.as_str();
        let skills = list(&ctx.workspace);
        let Some(skill) = skills.iter().find(|s| s.name == name) else {
            let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::new(format!(
                "no skill `{name}`; the skills are: {}",
                known.join(", ")
            )));
        };
        let rel = skill
            .path
            .strip_prefix(&ctx.workspace)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = super::confine::read_beneath(&ctx.workspace, &rel, MAX_SKILL_BYTES)
            .map_err(|e| ToolError::new(format!("cannot read the skill `{name}`: {e}")))?;
        Ok(body(&text).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_skill_that_links_out_of_the_workspace_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.md");
        std::fs::write(
            &secret,
            "---\nname: leak\ndescription: OUTSIDE-SECRET\n---\nbody",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("skills/leak")).unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join("skills/leak/SKILL.md")).unwrap();
        assert!(
            list(dir.path()).is_empty(),
            "a linked SKILL.md is not followed"
        );
        let ws2 = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("x")).unwrap();
        std::fs::copy(&secret, outside.path().join("x/SKILL.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws2.path().join("skills")).unwrap();
        assert!(
            list(ws2.path()).is_empty(),
            "a linked skills folder is not followed"
        );
    }

    #[tokio::test]
    async fn skills_are_listed_by_frontmatter_and_loaded_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("skills/standup");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), "---\nname: standup\ndescription: Write the daily standup note\n---\nAsk what was done yesterday.\n").unwrap();
        let nameless = dir.path().join("skills/broken");
        std::fs::create_dir_all(&nameless).unwrap();
        std::fs::write(nameless.join("SKILL.md"), "no frontmatter here").unwrap();
        let skills = list(dir.path());
        assert_eq!(skills.len(), 1);
        assert_eq!(
            (skills[0].name.as_str(), skills[0].description.as_str()),
            ("standup", "Write the daily standup note")
        );
        let ctx = ToolContext {
            workspace: dir.path().to_path_buf(),
            origin: None,
            caller: crate::tools::Caller::owner(),
            taint: Default::default(),
            pictures: Default::default(),
            session: None,
            mode: None,
        };
        let loaded = SkillTool
            .call(json!({"name": "standup"}), &ctx)
            .await
            .unwrap();
        assert_eq!(loaded, "Ask what was done yesterday.\n");
        let missing = SkillTool
            .call(json!({"name": "nope"}), &ctx)
            .await
            .unwrap_err();
        assert!(missing.0.contains("standup"));
    }
}
