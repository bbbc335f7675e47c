//! The config crate's tests, in one binary: loading, its errors, secrets, and writing.

mod load;
mod load_errors;
mod secrets;
mod voice;
mod write;
