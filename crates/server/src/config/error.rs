//! Why a configuration cannot be used: [`ConfigError`], rendered as `file:line:column: what is
//! wrong`, and the two ways to place an error in its file (a parser's error, a value's span).
//! Every reader of configuration files uses it; it uses none of them.

use serde_saphyr::Spanned;

/// A configuration that could not be used, rendered as `file:line:column: what is wrong`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}{snippet}")]
    Invalid {
        path: String,
        line: u64,
        column: u64,
        message: String,
        snippet: String,
    },
    #[error("{path}: {message}")]
    Whole { path: String, message: String },
}

/// `message` at the position of `spanned` in the file `source`.
pub(super) fn located_at<T>(source: &str, spanned: &Spanned<T>, message: String) -> ConfigError {
    ConfigError::Invalid {
        path: source.to_owned(),
        line: spanned.referenced.line(),
        column: spanned.referenced.column(),
        message,
        snippet: String::new(),
    }
}

/// Turns a parser error into `file:line:column: message` plus the parser's snippet.
pub(super) fn located(shown: &str, error: &serde_saphyr::Error) -> ConfigError {
    let rendered = error.to_string();
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or_default();
    // The first line reads "error: line L column C: message"; keep only the message.
    let message = first
        .split_once(": ")
        .map_or(first, |(_, rest)| {
            rest.strip_prefix("line ")
                .and_then(|position| position.split_once(": "))
                .map_or(rest, |(_, message)| message)
        })
        .to_owned();
    let snippet: String = lines
        .map(|l| format!("\n{}", l.replace("<input>", shown)))
        .collect::<String>();
    match error.location() {
        Some(loc) => ConfigError::Invalid {
            path: shown.to_owned(),
            line: loc.line(),
            column: loc.column(),
            message,
            snippet,
        },
        None => ConfigError::Whole {
            path: shown.to_owned(),
            message: rendered,
        },
    }
}
