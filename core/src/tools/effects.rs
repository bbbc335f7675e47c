//! What a tool does, declared once on the tool itself ([`super::Tool::effects`], and per
//! call [`super::Tool::call_effects`] where the arguments change it, as `cron`'s action
//! does), and every policy derived from that one declaration:
//!
//! - **taint** — a call that [`brings_untrusted`](Effects::brings_untrusted) content
//!   makes the conversation untrusted (reads are also judged by what they reached:
//!   `taint`), and so does offering a tool whose description is
//!   [`unvouched`](Effects::unvouched);
//! - **acting tools ask** — after untrusted content, a call that
//!   [`acts`](Effects::acts) needs the owner's yes (`[tools] after_untrusted`); a host's
//!   `default` mode asks for the same calls, `acceptEdits` for those that do more than
//!   edit workspace files;
//! - **side by side** — only calls that do not act (nor must run `ALONE`) run beside
//!   each other;
//! - **plan mode** — only tools marked [`PLAN`](Effects::PLAN) are offered and run;
//! - **subagents** — only tools marked [`SUBAGENT`](Effects::SUBAGENT);
//! - **tool presets** — a host's `--tool-preset` keeps tools by what they do
//!   (`super::preset`): `read-only` what only reads, `safe-edit` also edits in place
//!   (not what [`REPLACES_FILES`](Effects::REPLACES_FILES)), `no-bash` all but `RUNS`;
//! - **tiers** — the owner's memory ([`OWNER_MEMORY`](Effects::OWNER_MEMORY),
//!   [`WRITES_MEMORY`](Effects::WRITES_MEMORY)) only where it belongs; a tool that
//!   reads or writes the workspace by a `path` keeps non-owners out of the owner's files;
//!   one that reads stored [`CONVERSATIONS`](Effects::CONVERSATIONS) is kept out of groups.
//!
//! A tool that declares nothing gets [`Effects::STRICTEST`]: it acts in every way,
//! brings in untrusted content, and is offered in neither plan mode nor subagents.

bitflags::bitflags! {
    /// What a tool (or one call of it) does.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Effects: u16 {
        /// Reads files in the workspace.
        const READS_WORKSPACE = 1 << 0;
        /// Creates, changes or removes files in the workspace.
        const WRITES_WORKSPACE = 1 << 1;
        /// Runs commands.
        const RUNS = 1 << 2;
        /// Sends something to people (a message, a file).
        const SENDS = 1 << 3;
        /// Makes something happen later (a scheduled job).
        const SCHEDULES = 1 << 4;
        /// Reaches the internet to read (a page, a search).
        const FETCHES = 1 << 5;
        /// Brings in content nobody vouches for (a web page, a search result, an MCP
        /// server's answer).
        const UNTRUSTED = 1 << 6;
        /// Reads the owner's memory.
        const OWNER_MEMORY = 1 << 7;
        /// Changes the owner's memory.
        const WRITES_MEMORY = 1 << 8;
        /// Offered in plan mode (it only reads, looks up or plans).
        const PLAN = 1 << 9;
        /// Offered to subagents (the `task` tool's children).
        const SUBAGENT = 1 << 10;
        /// Runs alone even though it does not act (it starts work that counts against
        /// a limit shared by the calls beside it: a subagent).
        const ALONE = 1 << 11;
        /// Its name and description come from someone nobody vouches for (an MCP server
        /// not marked `trusted`): a turn it is offered in is untrusted.
        const UNVOUCHED = 1 << 12;
        /// Creates workspace files or replaces them whole, rather than changing part of
        /// one in place (`write_file`, not `edit_file`): a `safe-edit` preset keeps it out.
        const REPLACES_FILES = 1 << 13;
        /// Reads people's stored conversations: never offered in a group (but to the
        /// owner where their memory belongs there), and a non-owner finds only their own.
        const CONVERSATIONS = 1 << 14;
        /// Offered to every tier, whatever `access.member_tools` says: it reaches nothing
        /// itself (`tool_search` loads only tools the caller may use).
        const ANY_TIER = 1 << 15;
    }
}

impl Effects {
    /// What an undeclared tool is taken to do: everything, trusted by nobody.
    pub const STRICTEST: Effects = Effects::WRITES_WORKSPACE
        .union(Effects::READS_WORKSPACE)
        .union(Effects::RUNS)
        .union(Effects::SENDS)
        .union(Effects::SCHEDULES)
        .union(Effects::FETCHES)
        .union(Effects::UNTRUSTED)
        .union(Effects::OWNER_MEMORY)
        .union(Effects::WRITES_MEMORY)
        .union(Effects::REPLACES_FILES);

    /// What makes a call *act*: it changes something or reaches someone.
    const ACTING: Effects = Effects::WRITES_WORKSPACE
        .union(Effects::RUNS)
        .union(Effects::SENDS)
        .union(Effects::SCHEDULES)
        .union(Effects::WRITES_MEMORY);

    /// Whether the call acts (asks after untrusted content; runs alone).
    pub fn acts(self) -> bool {
        self.intersects(Self::ACTING)
    }

    /// Whether all it does beyond reading is editing workspace files (a host's
    /// `acceptEdits` lets these go ahead).
    pub fn only_edits(self) -> bool {
        self.intersection(Self::ACTING) == Effects::WRITES_WORKSPACE
    }

    /// Whether it may run beside other calls that do not act.
    pub fn read_only(self) -> bool {
        !self.acts() && !self.contains(Effects::ALONE)
    }

    /// Whether its result is content nobody vouches for.
    pub fn brings_untrusted(self) -> bool {
        self.contains(Effects::UNTRUSTED)
    }

    /// Whether offering it brings untrusted words into the prompt.
    pub fn unvouched(self) -> bool {
        self.contains(Effects::UNVOUCHED)
    }

    /// Whether it touches the owner's memory.
    pub fn owner_memory(self) -> bool {
        self.intersects(Effects::OWNER_MEMORY | Effects::WRITES_MEMORY)
    }

    /// Whether it reaches the workspace's files (by a path, where it takes one).
    pub fn workspace(self) -> bool {
        self.intersects(Effects::READS_WORKSPACE | Effects::WRITES_WORKSPACE)
    }

    pub fn in_plan_mode(self) -> bool {
        self.contains(Effects::PLAN)
    }

    pub fn in_subagents(self) -> bool {
        self.contains(Effects::SUBAGENT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undeclared_tool_acts_brings_untrusted_content_and_is_offered_nowhere_special() {
        let strictest = Effects::STRICTEST;
        assert!(strictest.acts() && !strictest.read_only());
        assert!(strictest.brings_untrusted() && strictest.owner_memory());
        assert!(!strictest.in_plan_mode() && !strictest.in_subagents());
        assert!(!strictest.only_edits());
    }

    #[test]
    fn policies_follow_the_declaration() {
        let read = Effects::READS_WORKSPACE | Effects::PLAN | Effects::SUBAGENT;
        assert!(!read.acts() && read.read_only() && read.in_plan_mode());
        let write = Effects::READS_WORKSPACE | Effects::WRITES_WORKSPACE | Effects::SUBAGENT;
        assert!(write.acts() && write.only_edits() && !write.in_plan_mode());
        let fetch = Effects::FETCHES | Effects::UNTRUSTED | Effects::PLAN;
        assert!(!fetch.acts() && fetch.brings_untrusted());
        let run = Effects::RUNS | Effects::WRITES_WORKSPACE;
        assert!(run.acts() && !run.only_edits());
        assert!((Effects::WRITES_MEMORY).acts() && Effects::OWNER_MEMORY.owner_memory());
    }
}
