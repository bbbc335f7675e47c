//! `ToolError`: how a tool call fails, worded for the model. A file of its own because
//! every part of the tools (confinement, arguments, each tool) answers with it.

/// A tool failure, worded for the model (and the user) to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
