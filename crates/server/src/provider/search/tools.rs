//! The tools: their schemas, and each call run against the index and the roots. Code roots
//! give `search_code`, `find_files`, `read_file`; docs roots give `search_docs`,
//! `get_section`, `list_documents`. Ranking is lexical (BM25 over the tokens of
//! `tokenize.rs`), not semantic. Every call blocks (index reads, file reads) and is run by the
//! provider inside `spawn_blocking`.

use std::io::BufRead;

use contract::ToolSchema;
use globset::{Glob, GlobMatcher};
use serde_json::{Value, json};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{TantivyDocument, Term};

use super::index::{SearchIndex, id, looks_binary};
use super::roots::{PathError, Root, confine};
use super::sections::{Format, sections};
use super::tokenize::{terms, tokens};
use crate::config::RootKind;
use crate::provider::{JsonObject, ToolError};

/// The most hits a search answers.
const MAX_LIMIT: u64 = 100;
/// How many candidates a search with `path_glob` looks through for `limit` matching ones.
const GLOB_CANDIDATES: usize = 5000;
/// Longest snippet line, in characters.
const SNIPPET_LINE_CHARS: usize = 240;

/// A relative path without `..` segments, so the schema itself refuses an absolute path or a
/// climb out of the root (INVALID_ARGUMENTS before the provider runs); symbolic links are
/// judged when the file is opened.
const RELATIVE_PATH: &str = r"^(\.|\.\.[^/]+|\.?[^/.][^/]*)(/(\.|\.\.[^/]+|\.?[^/.][^/]*))*$";

/// The tools of a provider with roots of these kinds.
pub fn schemas(code: bool, docs: bool) -> Vec<ToolSchema> {
    let tool = |name: &str, description: &str, input: Value, output: Value| ToolSchema {
        name: name.to_owned(),
        title: None,
        description: description.to_owned(),
        input_schema: input,
        output_schema: Some(output),
        untyped_result: contract::UntypedResult::AnyJson,
        annotations: Some(json!({"readOnlyHint": true, "openWorldHint": false})),
        qualified_name: None,
        icons: None,
        score: None,
    };
    let limit = |default: u64, max: u64| {
        json!({"type": "integer", "minimum": 1, "maximum": max, "default": default,
               "description": "The most results to answer."})
    };
    let mut out = Vec::new();
    if code {
        out.push(tool(
            "search_code",
            "Lexical full-text search (BM25 ranking, not semantic) over the code roots. Identifiers are split on camelCase, snake_case and punctuation, so `parse request` finds parseRequest and parse_request. Answers ranked hits: path, line range, snippet with the match, score.",
            json!({"type": "object", "required": ["query"], "additionalProperties": false, "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Words or identifiers to find (any of them; files matching more of them, and rarer ones, rank higher)."},
                "path_glob": {"type": "string", "description": "Only files whose path matches this glob (`src/**/*.rs`, `*.py`)."},
                "language": {"type": "string", "description": "Only files of this language (rust, python, typescript, javascript, go, …; from the extension)."},
                "limit": limit(10, MAX_LIMIT)
            }}),
            json!({"type": "object", "required": ["hits", "count"], "properties": {
                "count": {"type": "integer", "minimum": 0},
                "hits": {"type": "array", "items": {"type": "object", "required": ["path", "start_line", "end_line", "snippet", "score"], "properties": {
                    "path": {"type": "string"}, "language": {"type": "string"},
                    "start_line": {"type": "integer"}, "end_line": {"type": "integer"},
                    "snippet": {"type": "string"}, "score": {"type": "number"}}}}
            }}),
        ));
        out.push(tool(
            "find_files",
            "Lists the indexed files of the code roots whose path matches a glob (`*` also crosses folders: `*.rs` finds every Rust file).",
            json!({"type": "object", "required": ["glob"], "additionalProperties": false, "properties": {
                "glob": {"type": "string", "description": "A glob over paths relative to the root, e.g. `src/**/*.rs` or `*config*`."},
                "limit": limit(100, 1000)
            }}),
            json!({"type": "object", "required": ["files", "count", "truncated"], "properties": {
                "count": {"type": "integer", "minimum": 0}, "truncated": {"type": "boolean"},
                "files": {"type": "array", "items": {"type": "object", "required": ["path", "bytes"], "properties": {
                    "path": {"type": "string"}, "language": {"type": "string"}, "bytes": {"type": "integer"}}}}
            }}),
        ));
        out.push(tool(
            "read_file",
            "Reads lines of a file of the code roots. Paths are relative to a root; `..`, absolute paths and symbolic links leaving the root are refused. The answer is capped in size (`truncated` says so).",
            json!({"type": "object", "required": ["path"], "additionalProperties": false, "properties": {
                "path": {"type": "string", "pattern": RELATIVE_PATH, "description": "As search_code and find_files name it: relative to the root, no `..`."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line (1-based, default 1)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive (default: to the end or the cap)."}
            }}),
            json!({"type": "object", "required": ["path", "start_line", "end_line", "text", "truncated"], "properties": {
                "path": {"type": "string"}, "start_line": {"type": "integer"}, "end_line": {"type": "integer"},
                "text": {"type": "string"}, "truncated": {"type": "boolean"}}}),
        ));
    }
    if docs {
        out.push(tool(
            "search_docs",
            "Lexical full-text search (BM25 ranking, not semantic) over the documentation roots, by section: answers the document, the heading path of the section, its lines and a snippet with the match.",
            json!({"type": "object", "required": ["query"], "additionalProperties": false, "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Words to find."},
                "limit": limit(10, MAX_LIMIT)
            }}),
            json!({"type": "object", "required": ["hits", "count"], "properties": {
                "count": {"type": "integer", "minimum": 0},
                "hits": {"type": "array", "items": {"type": "object", "required": ["document", "heading_path", "start_line", "end_line", "snippet", "score"], "properties": {
                    "document": {"type": "string"}, "heading_path": {"type": "array", "items": {"type": "string"}},
                    "start_line": {"type": "integer"}, "end_line": {"type": "integer"},
                    "snippet": {"type": "string"}, "score": {"type": "number"}}}}
            }}),
        ));
        out.push(tool(
            "get_section",
            "The text of one section of a document: `heading` is its heading (`Install`) or heading path (`Guide > Install`), as search_docs answers it.",
            json!({"type": "object", "required": ["document", "heading"], "additionalProperties": false, "properties": {
                "document": {"type": "string", "pattern": RELATIVE_PATH, "description": "As list_documents or search_docs name it."},
                "heading": {"type": "string", "description": "The heading, or the heading path joined with ` > `; empty for the text before the first heading."}
            }}),
            json!({"type": "object", "required": ["document", "heading_path", "start_line", "end_line", "text", "truncated"], "properties": {
                "document": {"type": "string"}, "heading_path": {"type": "array", "items": {"type": "string"}},
                "start_line": {"type": "integer"}, "end_line": {"type": "integer"},
                "text": {"type": "string"}, "truncated": {"type": "boolean"}}}),
        ));
        out.push(tool(
            "list_documents",
            "Lists the indexed documents of the documentation roots: name, title (first heading), format and number of sections.",
            json!({"type": "object", "additionalProperties": false, "properties": {}}),
            json!({"type": "object", "required": ["documents", "count"], "properties": {
                "count": {"type": "integer", "minimum": 0},
                "documents": {"type": "array", "items": {"type": "object", "required": ["document", "format", "sections", "bytes"], "properties": {
                    "document": {"type": "string"}, "title": {"type": "string"}, "format": {"type": "string"},
                    "sections": {"type": "integer"}, "bytes": {"type": "integer"}}}}
            }}),
        ));
    }
    out
}

/// What a call needs besides its arguments.
pub struct Context<'a> {
    pub index: &'a SearchIndex,
    pub roots: &'a [Root],
    pub max_read_bytes: u64,
}

fn string<'a>(args: &'a JsonObject, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn number(args: &JsonObject, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments(message.into())
}

/// Runs `tool`.
pub fn call(cx: &Context<'_>, tool: &str, args: &JsonObject) -> Result<Value, ToolError> {
    match tool {
        "search_code" => search(cx, RootKind::Code, args),
        "search_docs" => search(cx, RootKind::Docs, args),
        "find_files" => find_files(cx, args),
        "read_file" => read_file(cx, args),
        "get_section" => get_section(cx, args),
        "list_documents" => Ok(list_documents(cx)),
        other => Err(ToolError::NotFound(other.to_owned())),
    }
}

fn search(cx: &Context<'_>, kind: RootKind, args: &JsonObject) -> Result<Value, ToolError> {
    let query_text = string(args, "query").unwrap_or_default();
    let limit = number(args, "limit").unwrap_or(10).clamp(1, MAX_LIMIT) as usize;
    let glob = string(args, "path_glob").map(matcher);
    let f = cx.index.fields;
    let query_terms = terms(query_text);
    if query_terms.is_empty() {
        return Ok(json!({"count": 0, "hits": []}));
    }
    // Each term of the query (whole words and their parts) in the text, the path and the
    // heading, any of them: BM25 ranks by how many match and how rare they are.
    let mut words: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for term in &query_terms {
        for (field, boost) in [(f.body, 1.0), (f.path_text, 2.0), (f.heading, 2.0)] {
            let query = TermQuery::new(
                Term::from_field_text(field, term),
                IndexRecordOption::WithFreqs,
            );
            words.push((
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(query), boost)),
            ));
        }
    }
    let parsed: Box<dyn Query> = Box::new(BooleanQuery::new(words));
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![
        (Occur::Must, parsed),
        (
            Occur::Must,
            Box::new(TermQuery::new(
                Term::from_field_text(f.kind, kind.as_str()),
                IndexRecordOption::Basic,
            )),
        ),
    ];
    if let Some(language) = string(args, "language") {
        clauses.push((
            Occur::Must,
            Box::new(TermQuery::new(
                Term::from_field_text(f.lang, &language.to_ascii_lowercase()),
                IndexRecordOption::Basic,
            )),
        ));
    }
    let query = BooleanQuery::new(clauses);
    let searcher = cx.index.reader.searcher();
    let wanted = if glob.is_some() {
        GLOB_CANDIDATES
    } else {
        limit
    };
    let top = searcher
        .search(&query, &TopDocs::with_limit(wanted))
        .map_err(|e| ToolError::Execution(format!("search failed: {e}")))?;
    let mut hits = Vec::new();
    for (score, address) in top {
        let doc: TantivyDocument = searcher
            .doc(address)
            .map_err(|e| ToolError::Execution(format!("search failed: {e}")))?;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let line = |field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(1) as usize;
        let path = text(f.path);
        if glob
            .as_ref()
            .is_some_and(|g| !g.as_ref().is_some_and(|g| g.is_match(&path)))
        {
            continue;
        }
        let body = text(f.body);
        let (from, to, snippet) = snippet(&body, line(f.start_line), &query_terms);
        let score = (score as f64 * 1000.0).round() / 1000.0;
        hits.push(match kind {
            RootKind::Code => json!({
                "path": path, "language": text(f.lang), "start_line": from, "end_line": to,
                "snippet": snippet, "score": score,
            }),
            RootKind::Docs => {
                let heading = text(f.heading);
                let heading_path: Vec<&str> = if heading.is_empty() {
                    Vec::new()
                } else {
                    heading.split(" > ").collect()
                };
                json!({
                    "document": path, "heading_path": heading_path,
                    "start_line": line(f.start_line), "end_line": line(f.end_line),
                    "snippet": snippet, "score": score,
                })
            }
        });
        if hits.len() == limit {
            break;
        }
    }
    Ok(json!({"count": hits.len(), "hits": hits}))
}

/// The lines of `body` around its line with the most query terms: (first, last, text), line
/// numbers in the file.
fn snippet(body: &str, first_line: usize, query: &[String]) -> (usize, usize, String) {
    let lines: Vec<&str> = body.lines().collect();
    if lines.is_empty() {
        return (first_line, first_line, String::new());
    }
    let score = |line: &str| {
        let found: Vec<String> = tokens(line).into_iter().map(|t| t.text).collect();
        query.iter().filter(|q| found.contains(q)).count()
    };
    let best = (0..lines.len())
        .max_by_key(|&i| (score(lines[i]), std::cmp::Reverse(i)))
        .unwrap_or(0);
    let from = best.saturating_sub(1);
    let to = (best + 1).min(lines.len() - 1);
    let text = lines[from..=to]
        .iter()
        .map(|l| l.chars().take(SNIPPET_LINE_CHARS).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n");
    (first_line + from, first_line + to, text)
}

/// A glob's matcher; a glob that does not parse (`{` alone) matches its text literally, so
/// any string the schema accepts is a valid argument.
fn matcher(glob: &str) -> Option<GlobMatcher> {
    Glob::new(glob)
        .or_else(|_| Glob::new(&globset::escape(glob)))
        .ok()
        .map(|g| g.compile_matcher())
}

fn find_files(cx: &Context<'_>, args: &JsonObject) -> Result<Value, ToolError> {
    let matcher = matcher(string(args, "glob").unwrap_or("*"));
    let limit = number(args, "limit").unwrap_or(100).clamp(1, 1000) as usize;
    let files = cx.index.files();
    let mut out = Vec::new();
    let mut matched = 0;
    for (key, entry) in files.iter() {
        let Some(name) = key.strip_prefix("code:") else {
            continue;
        };
        if !matcher.as_ref().is_some_and(|m| m.is_match(name)) {
            continue;
        }
        matched += 1;
        if out.len() < limit {
            let mut file = json!({"path": name, "bytes": entry.size});
            if let Some(language) = &entry.language {
                file["language"] = json!(language);
            }
            out.push(file);
        }
    }
    Ok(json!({"count": out.len(), "truncated": matched > out.len(), "files": out}))
}

/// The file a caller named, confined to the roots of `kind` and among the files the root
/// indexes (so `.gitignore`d files such as `.env` stay unreadable).
fn open(cx: &Context<'_>, kind: RootKind, name: &str) -> Result<std::path::PathBuf, ToolError> {
    let (root, file) = confine(cx.roots, kind, name).map_err(|e| match e {
        PathError::NoRoot(_) => ToolError::Execution(e.to_string()),
        _ => invalid(e.to_string()),
    })?;
    if file.is_dir() {
        return Err(ToolError::Execution(format!(
            "'{name}' is a folder, not a file"
        )));
    }
    if !file.exists() {
        return Err(ToolError::Execution(format!(
            "no file '{name}' under the roots"
        )));
    }
    if !root.admits(&file) {
        return Err(invalid(format!(
            "'{name}' is not among the searched files (ignored by .gitignore or the root's globs)"
        )));
    }
    match looks_binary(&file) {
        Ok(false) => Ok(file),
        Ok(true) => Err(ToolError::Execution(format!("'{name}' is a binary file"))),
        Err(e) => Err(ToolError::Execution(format!(
            "'{name}' cannot be read: {e}"
        ))),
    }
}

/// Lines `from..=to` (1-based) of `file`, at most `cap` bytes, read line by line so a large
/// file is never read whole: (text, last line given, truncated).
fn lines_of(
    file: &std::path::Path,
    from: usize,
    to: Option<usize>,
    cap: u64,
) -> std::io::Result<(String, usize, bool)> {
    let reader = std::io::BufReader::new(std::fs::File::open(file)?);
    let mut text = String::new();
    let mut last = from.saturating_sub(1);
    let mut truncated = false;
    for (i, line) in reader.split(b'\n').enumerate() {
        let n = i + 1;
        if n < from {
            line?;
            continue;
        }
        if to.is_some_and(|to| n > to) {
            break;
        }
        let line = line?;
        let line = String::from_utf8_lossy(&line);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if (text.len() + line.len() + 1) as u64 > cap {
            truncated = true;
            break;
        }
        if n > from {
            text.push('\n');
        }
        text.push_str(line);
        last = n;
    }
    Ok((text, last, truncated))
}

fn read_file(cx: &Context<'_>, args: &JsonObject) -> Result<Value, ToolError> {
    let name = string(args, "path").unwrap_or_default();
    let from = number(args, "start_line").unwrap_or(1).max(1) as usize;
    let to = number(args, "end_line").map(|n| n as usize);
    let file = open(cx, RootKind::Code, name)?;
    let (text, last, truncated) = lines_of(&file, from, to, cx.max_read_bytes)
        .map_err(|e| ToolError::Execution(format!("'{name}' cannot be read: {e}")))?;
    Ok(
        json!({"path": name, "start_line": from, "end_line": last, "text": text, "truncated": truncated}),
    )
}

fn get_section(cx: &Context<'_>, args: &JsonObject) -> Result<Value, ToolError> {
    let name = string(args, "document").unwrap_or_default();
    let heading = string(args, "heading").unwrap_or_default().trim();
    let file = open(cx, RootKind::Docs, name)?;
    if !cx.index.files().contains_key(&id(RootKind::Docs, name)) {
        return Err(ToolError::Execution(format!(
            "'{name}' is not an indexed document (list_documents lists them)"
        )));
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| ToolError::Execution(format!("'{name}' cannot be read: {e}")))?;
    let all = sections(&text, Format::of(&file));
    let wanted =
        |s: &&super::sections::Section| s.heading_path.join(" > ").eq_ignore_ascii_case(heading);
    let last = |s: &&super::sections::Section| {
        s.heading_path
            .last()
            .is_some_and(|h| h.eq_ignore_ascii_case(heading))
    };
    let Some(section) = all.iter().find(wanted).or_else(|| all.iter().find(last)) else {
        let known: Vec<String> = all
            .iter()
            .take(30)
            .map(|s| s.heading_path.join(" > "))
            .collect();
        return Err(ToolError::Execution(format!(
            "'{name}' has no section '{heading}'; its headings: {}",
            known.join("; ")
        )));
    };
    let cap = cx.max_read_bytes as usize;
    let mut body = section.text.clone();
    let truncated = body.len() > cap;
    if truncated {
        let mut end = cap;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        let cut = body[..end].rfind('\n').unwrap_or(0);
        body.truncate(cut);
    }
    Ok(json!({
        "document": name, "heading_path": section.heading_path,
        "start_line": section.start_line, "end_line": section.end_line,
        "text": body, "truncated": truncated,
    }))
}

fn list_documents(cx: &Context<'_>) -> Value {
    let files = cx.index.files();
    let documents: Vec<Value> = files
        .iter()
        .filter_map(|(key, entry)| {
            let name = key.strip_prefix("docs:")?;
            let mut doc = json!({
                "document": name, "format": entry.format.clone().unwrap_or_else(|| "text".into()),
                "sections": entry.sections, "bytes": entry.size,
            });
            if let Some(title) = &entry.title {
                doc["title"] = json!(title);
            }
            Some(doc)
        })
        .collect();
    json!({"count": documents.len(), "documents": documents})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_pattern_refuses_climbing_and_absolute_paths() {
        let re = regex_lite(RELATIVE_PATH);
        for ok in [
            "a",
            "src/a.rs",
            ".gitignore",
            "a/.b/c",
            "...",
            "..a",
            "./a",
            "a.b",
        ] {
            assert!(re(ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "/etc/passwd",
            "..",
            "../a",
            "a/../b",
            "a/..",
            "a//b",
            "a/",
        ] {
            assert!(!re(bad), "{bad}");
        }
    }

    /// The pattern checked the way the gateway checks schemas: through jsonschema.
    fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
        let schema = json!({"type": "string", "pattern": pattern});
        let validator = jsonschema::validator_for(&schema).unwrap();
        move |s| validator.is_valid(&json!(s))
    }

    #[test]
    fn the_snippet_is_around_the_best_line() {
        let body = "a\nb\nfn parse_request() {}\nc\nd";
        let (from, to, text) = snippet(body, 51, &terms("parse request"));
        assert_eq!((from, to), (52, 54));
        assert_eq!(text, "b\nfn parse_request() {}\nc");
    }

    #[test]
    fn a_glob_that_does_not_parse_matches_literally() {
        let m = matcher("{").unwrap();
        assert!(m.is_match("{"));
        assert!(!m.is_match("a"));
        assert!(
            matcher("*.rs").unwrap().is_match("src/a.rs"),
            "* crosses folders"
        );
    }

    #[test]
    fn lines_are_read_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "one\ntwo\nthree\nfour\n").unwrap();
        assert_eq!(
            lines_of(&f, 2, Some(3), 100).unwrap(),
            ("two\nthree".into(), 3, false)
        );
        assert_eq!(
            lines_of(&f, 1, None, 8).unwrap(),
            ("one\ntwo".into(), 2, true)
        );
    }
}
