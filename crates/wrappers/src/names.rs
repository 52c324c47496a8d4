//! How tool and argument names become names in generated code (documented in
//! docs/wrappers.md): ASCII snake case, safe as Python identifiers and file names. Two tools of
//! one service that map to the same name are an error naming both; arguments that collide are
//! numbered (`max_depth`, `max_depth_2`) since they never name a file.

/// Python's hard keywords (3.11).
const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

/// `camelCase`, `kebab-case`, `Title Case`, `ünïcode` → `camel_case`, `kebab_case`,
/// `title_case`, `n_code`: an underscore between a lowercase letter or digit and an uppercase
/// letter, ASCII lowercased, anything but `[a-z0-9_]` an underscore, runs of underscores one,
/// none at either end.
pub fn normalize(name: &str) -> String {
    let mut split = String::with_capacity(name.len() + 4);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if c.is_ascii_uppercase()
            && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
        {
            split.push('_');
        }
        split.push(c);
        previous = Some(c);
    }
    let mut out = String::with_capacity(split.len());
    for c in split.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    out.trim_matches('_').to_owned()
}

/// A tool's (or service's) name in code and file names: `t_` in front of one that starts with
/// a digit or is a Python keyword; `tool` for one with no usable character.
pub fn tool_safe_name(name: &str) -> String {
    let s = normalize(name);
    if s.is_empty() {
        return "tool".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) || is_keyword(&s) {
        return format!("t_{s}");
    }
    s
}

/// An argument's name as a Python parameter: `p_` in front of a leading digit, `_` after a
/// keyword or `self`; `arg` for one with no usable character.
pub fn param_safe_name(name: &str) -> String {
    let s = normalize(name);
    if s.is_empty() {
        return "arg".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        return format!("p_{s}");
    }
    if is_keyword(&s) || s == "self" {
        return format!("{s}_");
    }
    s
}

/// `get_sum` → `GetSum`.
pub fn pascal(safe: &str) -> String {
    safe.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut chars = p.chars();
            chars
                .next()
                .map(|f| f.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `EXECUTION_ERROR` → `ExecutionError`, `TOOL_NOT_FOUND` → `ToolNotFoundError`.
pub fn error_class(code: &str) -> String {
    let name = pascal(&code.to_ascii_lowercase());
    if name.ends_with("Error") {
        name
    } else {
        name + "Error"
    }
}

/// Numbers repeated names in order: `a`, `a` → `a`, `a_2`.
pub fn numbered(names: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .map(|name| {
            let mut candidate = name.clone();
            let mut n = 2;
            while !seen.insert(candidate.clone()) {
                candidate = format!("{name}_{n}");
                n += 1;
            }
            candidate
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_snake_case_identifiers() {
        assert_eq!(normalize("includeImage"), "include_image");
        assert_eq!(normalize("get-tiny-image"), "get_tiny_image");
        assert_eq!(normalize("ünïcode tool"), "n_code_tool");
        assert_eq!(normalize("MaxDepth"), "max_depth");
        assert_eq!(normalize("HTTPServer"), "httpserver");
        assert_eq!(tool_safe_name("2fast"), "t_2fast");
        assert_eq!(tool_safe_name("class"), "t_class");
        assert_eq!(tool_safe_name("--"), "tool");
        assert_eq!(param_safe_name("from"), "from_");
        assert_eq!(param_safe_name("self"), "self_");
        assert_eq!(param_safe_name("2nd"), "p_2nd");
        assert_eq!(pascal("get_sum"), "GetSum");
        assert_eq!(error_class("EXECUTION_ERROR"), "ExecutionError");
        assert_eq!(error_class("TIMEOUT"), "TimeoutError");
        assert_eq!(
            numbered(vec!["a".into(), "b".into(), "a".into(), "a".into()]),
            ["a", "b", "a_2", "a_3"]
        );
    }
}
