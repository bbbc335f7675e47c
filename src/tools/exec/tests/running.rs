//! The tool runs commands as promised.
