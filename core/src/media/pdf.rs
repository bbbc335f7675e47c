//! The text of a PDF, extracted in the confined child process (`pincer __pdf-text`,
//! see `child`): the parser reads hostile files.

use serde::{Deserialize, Serialize};

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
pub async fn extract(bytes: &[u8]) -> Result<PdfText, String> {
    super::child::run(SUBCOMMAND, "PDF", bytes).await
}

/// In the child: the pages and text of a PDF.
pub(super) fn text_of(bytes: &[u8]) -> Result<PdfText, String> {
    let document =
        pdf_extract::Document::load_mem(bytes).map_err(|e| format!("not a readable PDF: {e}"))?;
    if document.is_encrypted() {
        return Err("it is encrypted".into());
    }
    let pages = document.get_pages().len();
    let mut text = pdf_extract::extract_text_from_mem(bytes)
        .map_err(|e| format!("no text could be extracted: {e}"))?;
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
        let err = text_of(b"%PDF-1.4 but then nothing").unwrap_err();
        assert!(err.contains("not a readable PDF"), "{err}");
    }
}
