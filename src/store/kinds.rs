//! The small enums stored as text in the messages table: who said a message (`role`)
//! and where a user message is in its life (`status`), with their stored spellings.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub(super) fn parse(text: &str) -> Role {
        match text {
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => Role::User,
        }
    }
}

/// Where a user message is in its life: stored, being answered, answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Stored, no turn has started on it yet.
    Pending,
    /// A turn is answering it.
    Active,
    /// A turn is answering it for the second time, after a restart; never a third.
    Retried,
    Done,
    /// Kept, deliberately not answered and never shown to the model (a non-owner's
    /// message past `access.rate_per_minute`).
    Ignored,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Active => "active",
            Status::Retried => "retried",
            Status::Done => "done",
            Status::Ignored => "ignored",
        }
    }

    pub(super) fn parse(text: &str) -> Status {
        match text {
            "pending" => Status::Pending,
            "active" => Status::Active,
            "retried" => Status::Retried,
            "ignored" => Status::Ignored,
            _ => Status::Done,
        }
    }
}
