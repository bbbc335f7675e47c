//! The text of a PDF, extracted in the confined child process (`pincer __pdf-text`,
//! see `child`): the parser reads hostile files.

use serde::{Deserialize, Serialize};

use super::child::ReadError;

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "__pdf-text";
/// The most text the child returns, in bytes (the message takes 100 KB of it).
const MAX_TEXT: usize = 200 * 1024;

/// What the child found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PdfText {
    pub pages: usize,
    pub text: String,
}

/// Extract the text of `bytes` in a child process of this binary.
pub async fn extract(bytes: &[u8]) -> Result<PdfText, ReadError> {
    super::child::run(SUBCOMMAND, "PDF", bytes).await
}

/// Why a PDF gave no text (in the child; the gateway hears the words).
#[derive(Debug, thiserror::Error)]
pub(super) enum PdfError {
    #[error("not a readable PDF: {0}")]
    Unreadable(#[from] pdf_extract::Error),
    #[error("it is encrypted")]
    Encrypted,
    #[error("no text could be extracted: {0}")]
    NoText(#[from] pdf_extract::OutputError),
}

/// In the child: the pages and text of a PDF.
pub(super) fn text_of(bytes: &[u8]) -> Result<PdfText, PdfError> {
    let document = pdf_extract::Document::load_mem(bytes)?;
    if document.is_encrypted() {
        return Err(PdfError::Encrypted);
    }
    let pages = document.get_pages().len();
    let mut text = pdf_extract::extract_text_from_mem(bytes)?;
    if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    Ok(PdfText { pages, text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_not_a_pdf() {
        let err = text_of(b"%PDF-1.4 but then nothing")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a readable PDF"), "{err}");
    }
}
