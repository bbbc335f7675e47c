//! Tool presets: the restriction a host program asks for with seed 001's
//! `--tool-preset`, by conversation, on top of everything else (tiers, permission modes,
//! rules). Which tools a preset keeps follows from each tool's declared `Effects`, never
//! from a list of names:
//!
//! - `full` — every tool;
//! - `read-only` — tools that only read or look up (the seed's Read, Glob, Grep,
//!   WebFetch, WebSearch): nothing that writes, runs, sends, schedules, changes memory
//!   or starts a subagent;
//! - `no-bash` — every tool but the ones that run commands (`exec`);
//! - `safe-edit` — `read-only` plus edits of workspace files in place (`edit_file`), not
//!   files written whole (`write_file`) nor commands.
//!
//! A tool the preset leaves out is not offered to the model and is refused if called
//! anyway, in every permission mode (`bypassPermissions` included): `Caller::may_use`.

use super::Effects;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolPreset {
    #[default]
    Full,
    ReadOnly,
    NoBash,
    SafeEdit,
}

impl ToolPreset {
    /// The preset a host names (seed 001's spelling).
    pub fn parse(name: &str) -> Option<ToolPreset> {
        Some(match name {
            "full" => ToolPreset::Full,
            "read-only" => ToolPreset::ReadOnly,
            "no-bash" => ToolPreset::NoBash,
            "safe-edit" => ToolPreset::SafeEdit,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolPreset::Full => "full",
            ToolPreset::ReadOnly => "read-only",
            ToolPreset::NoBash => "no-bash",
            ToolPreset::SafeEdit => "safe-edit",
        }
    }

    /// Whether a tool that does `effects` is kept.
    pub fn allows(self, effects: Effects) -> bool {
        match self {
            ToolPreset::Full => true,
            ToolPreset::ReadOnly => effects.read_only(),
            ToolPreset::NoBash => !effects.contains(Effects::RUNS),
            ToolPreset::SafeEdit => {
                effects.read_only()
                    || (effects.only_edits() && !effects.contains(Effects::REPLACES_FILES))
            }
        }
    }

    /// What the preset keeps, for a refusal.
    pub fn keeps(self) -> &'static str {
        match self {
            ToolPreset::Full => "every tool",
            ToolPreset::ReadOnly => "only tools that read or look things up",
            ToolPreset::NoBash => "every tool but commands",
            ToolPreset::SafeEdit => {
                "only tools that read, and edits of existing files in place (edit_file)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ: Effects = Effects::READS_WORKSPACE
        .union(Effects::PLAN)
        .union(Effects::SUBAGENT);
    const EDIT: Effects = Effects::READS_WORKSPACE
        .union(Effects::WRITES_WORKSPACE)
        .union(Effects::SUBAGENT);
    const WRITE: Effects = EDIT.union(Effects::REPLACES_FILES);
    const EXEC: Effects = Effects::RUNS.union(Effects::WRITES_WORKSPACE);
    const FETCH: Effects = Effects::FETCHES.union(Effects::UNTRUSTED);

    #[test]
    fn each_preset_keeps_what_seed_001_says_by_effects() {
        use ToolPreset::*;
        for (effects, [full, read_only, no_bash, safe_edit]) in [
            (READ, [true, true, true, true]),
            (FETCH, [true, true, true, true]),
            (EDIT, [true, false, true, true]),
            (WRITE, [true, false, true, false]),
            (EXEC, [true, false, false, false]),
            (Effects::ALONE, [true, false, true, false]),
            (Effects::SENDS, [true, false, true, false]),
            (Effects::STRICTEST, [true, false, false, false]),
        ] {
            assert_eq!(Full.allows(effects), full, "{effects:?}");
            assert_eq!(ReadOnly.allows(effects), read_only, "{effects:?}");
            assert_eq!(NoBash.allows(effects), no_bash, "{effects:?}");
            assert_eq!(SafeEdit.allows(effects), safe_edit, "{effects:?}");
        }
    }

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for preset in [
            ToolPreset::Full,
            ToolPreset::ReadOnly,
            ToolPreset::NoBash,
            ToolPreset::SafeEdit,
        ] {
            assert_eq!(ToolPreset::parse(preset.as_str()), Some(preset));
        }
        assert_eq!(ToolPreset::parse("readonly"), None);
    }
}
