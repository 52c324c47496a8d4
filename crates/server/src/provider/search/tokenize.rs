//! Tokens for code: words are runs of letters and digits (`_` included), split on every other
//! character; each word is indexed whole and, when it is compound, also by its parts —
//! `parseHttpRequest` gives `parsehttprequest`, `parse`, `http`, `request`; `max_file_bytes`
//! gives `max_file_bytes`, `max`, `file`, `bytes`. All lowercased, so a query for `request`
//! or `parse_http_request` finds all of those spellings. The same tokenizer reads queries.
//!
//! Also: the language of a file from its extension.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under in the index.
pub const CODE_TOKENIZER: &str = "code";

/// Longest token kept (longer runs are hashes and base64, noise for search).
const MAX_TOKEN_BYTES: usize = 64;

#[derive(Clone, Default)]
pub struct CodeTokenizer;

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokens;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokens {
        CodeTokens {
            tokens: tokens(text),
            next: 0,
        }
    }
}

pub struct CodeTokens {
    tokens: Vec<Token>,
    next: usize,
}

impl TokenStream for CodeTokens {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }
    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

/// Every token of `text`, in order, with byte offsets; a compound word's parts share its
/// position so phrase queries still line up.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut position = 0;
    for (start, word) in words(text) {
        if word.len() > MAX_TOKEN_BYTES {
            continue;
        }
        let parts = parts(word);
        let mut push = |from: usize, to: usize, text: String| {
            out.push(Token {
                offset_from: start + from,
                offset_to: start + to,
                position,
                text,
                position_length: 1,
            })
        };
        push(0, word.len(), word.to_lowercase());
        if parts.len() > 1 {
            for (from, to) in parts {
                push(from, to, word[from..to].to_lowercase());
            }
        }
        position += 1;
    }
    out
}

/// The lowercased terms of `text` (what a query's words become), without repeats.
pub fn terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for t in tokens(text) {
        if !terms.contains(&t.text) {
            terms.push(t.text);
        }
    }
    terms
}

/// Runs of alphanumerics and `_`, with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    let mut chars = text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')));
    std::iter::from_fn(move || {
        for (i, c) in chars.by_ref() {
            let word_char = c.is_alphanumeric() || c == '_';
            match (start, word_char) {
                (None, true) => start = Some(i),
                (Some(s), false) => {
                    start = None;
                    return Some((s, &text[s..i]));
                }
                _ => {}
            }
        }
        None
    })
}

/// The byte ranges of a word's parts: split at `_`, at lower→upper (`parseHttp`), at the
/// last upper of a run before a lower (`HTTPServer` → `HTTP`, `Server`) and between letters
/// and digits (`utf8` → `utf`, `8`).
fn parts(word: &str) -> Vec<(usize, usize)> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |c: char| {
        if c.is_lowercase() {
            Class::Lower
        } else if c.is_uppercase() {
            Class::Upper
        } else if c.is_numeric() {
            Class::Digit
        } else {
            Class::Other
        }
    };
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut out = Vec::new();
    let mut from: Option<usize> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c == '_' {
            if let Some(f) = from.take() {
                out.push((f, i));
            }
            continue;
        }
        let Some(f) = from else {
            from = Some(i);
            continue;
        };
        let prev = class(chars[k - 1].1);
        let here = class(c);
        let next = chars.get(k + 1).map(|&(_, n)| class(n));
        let boundary = match (prev, here) {
            (Class::Lower, Class::Upper) => true,
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            (Class::Digit, Class::Lower | Class::Upper) => true,
            (Class::Lower | Class::Upper, Class::Digit) => true,
            _ => false,
        };
        if boundary {
            out.push((f, i));
            from = Some(i);
        }
    }
    if let Some(f) = from {
        out.push((f, word.len()));
    }
    out
}

/// The language of a file, from its extension (or name); `None` for unknown ones.
pub fn language(path: &std::path::Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    if name == "Dockerfile" {
        return Some("dockerfile");
    }
    if name == "Makefile" {
        return Some("make");
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "tsx" | "mts" | "cts" => "typescript",
        "go" => "go",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "cs" => "csharp",
        "rb" => "ruby",
        "php" => "php",
        "swift" => "swift",
        "scala" => "scala",
        "sh" | "bash" | "zsh" => "shell",
        "sql" => "sql",
        "html" | "htm" => "html",
        "css" | "scss" => "css",
        "json" => "json",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "xml" | "plist" => "xml",
        "md" | "markdown" => "markdown",
        "rst" => "rst",
        "txt" => "text",
        "proto" => "protobuf",
        "lua" => "lua",
        "hs" => "haskell",
        "ex" | "exs" => "elixir",
        "erl" => "erlang",
        "zig" => "zig",
        "nix" => "nix",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokens(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn camel_snake_and_punctuation_are_split() {
        assert_eq!(
            texts("fn parseHttpRequest(max_file_bytes)"),
            [
                "fn",
                "parsehttprequest",
                "parse",
                "http",
                "request",
                "max_file_bytes",
                "max",
                "file",
                "bytes"
            ]
        );
        assert_eq!(texts("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(texts("utf8::decode"), ["utf8", "utf", "8", "decode"]);
        assert_eq!(texts("a.b->c"), ["a", "b", "c"]);
        // Offsets point at the source text.
        let t = tokens("x fooBar");
        assert_eq!(&"x fooBar"[t[2].offset_from..t[2].offset_to], "foo");
        assert_eq!(t[1].position, t[3].position);
    }

    #[test]
    fn a_query_finds_every_spelling() {
        let q = terms("parse_request");
        for spelling in [
            "parseRequest",
            "ParseRequest",
            "parse-request",
            "PARSE_REQUEST",
        ] {
            let t = texts(spelling);
            assert!(q.iter().skip(1).all(|term| t.contains(term)), "{spelling}");
        }
    }

    #[test]
    fn languages_by_extension() {
        use std::path::Path;
        assert_eq!(language(Path::new("src/main.rs")), Some("rust"));
        assert_eq!(language(Path::new("a/b.TSX")), Some("typescript"));
        assert_eq!(language(Path::new("Dockerfile")), Some("dockerfile"));
        assert_eq!(language(Path::new("x.unknown")), None);
    }
}
