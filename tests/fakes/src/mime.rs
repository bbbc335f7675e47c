//! Content types guessed from file names, as the platforms guess them for a file that
//! came without one (Telegram's `mime_type`, Discord's `content_type`, Slack's
//! `mimetype` and `filetype`). Shared by every fake; it decides nothing else.

/// The extension of `name` without its dot, lower-cased; `""` without one (a leading dot
/// alone, as in `.env`, is no extension).
pub(crate) fn extension(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}

/// The content type of a file called `name`; `application/octet-stream` when unknown.
pub(crate) fn from_name(name: &str) -> &'static str {
    match extension(name).as_str() {
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "heic" => "image/heic",
        "csv" => "text/csv",
        "html" => "text/html",
        "xml" => "application/xml",
        "zip" => "application/zip",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "mp3" => "audio/mpeg",
        "m4a" => "audio/mp4",
        "wav" => "audio/x-wav",
        "flac" => "audio/flac",
        "webm" => "audio/webm",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_the_extension() {
        assert_eq!(from_name("report.PDF"), "application/pdf");
        assert_eq!(from_name("data.csv"), "text/csv");
        assert_eq!(from_name("shot.png"), "image/png");
        assert_eq!(from_name("song.mp3"), "audio/mpeg");
        assert_eq!(from_name("no-extension"), "application/octet-stream");
        assert_eq!(extension(".env"), "");
        assert_eq!(extension("a.tar.GZ"), "gz");
    }
}
