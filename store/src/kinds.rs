//! The small enums stored as text in the messages table: who said a message (`role`)
//! and where a user message is in its life (`status`), with their stored spellings.
//! Text this build does not know is an error (`StoreError::Corrupt`), never a guess.

use std::str::FromStr;

use super::StoreError;

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
}

/// `messages.role` read back.
impl FromStr for Role {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Role, StoreError> {
        match text {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            _ => Err(StoreError::corrupt("messages", "role", text)),
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
}

/// `messages.status` read back.
impl FromStr for Status {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Status, StoreError> {
        match text {
            "pending" => Ok(Status::Pending),
            "active" => Ok(Status::Active),
            "retried" => Ok(Status::Retried),
            "done" => Ok(Status::Done),
            "ignored" => Ok(Status::Ignored),
            _ => Err(StoreError::corrupt("messages", "status", text)),
        }
    }
}
