//! The template filters that make service text safe where it lands: a bash single-quoted
//! string, a Python literal or docstring, a `#` comment, a markdown table cell, a one-line
//! summary. A filter given a non-string value works on its compact JSON text.

use minijinja::Value;

/// A string as it is; anything else as compact JSON (non-ASCII kept).
fn text(value: &Value) -> String {
    match value.as_str() {
        Some(s) => s.to_owned(),
        None => serde_json::to_string(value).unwrap_or_default(),
    }
}

pub fn sh_quote(value: Value) -> String {
    format!("'{}'", text(&value).replace('\'', "'\\''"))
}

fn is_control(c: char) -> bool {
    (c as u32) < 0x20 || c as u32 == 0x7f
}

fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_control(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn py_literal(value: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match value {
        J::Null => "None".into(),
        J::Bool(true) => "True".into(),
        J::Bool(false) => "False".into(),
        J::Number(n) => n.to_string(),
        J::String(s) => py_str(s),
        J::Array(items) => format!(
            "[{}]",
            items.iter().map(py_literal).collect::<Vec<_>>().join(", ")
        ),
        J::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), py_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A JSON value as a Python literal.
pub fn py_repr(value: Value) -> Result<String, minijinja::Error> {
    let json = serde_json::to_value(&value).map_err(|e| {
        minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
    })?;
    Ok(py_literal(&json))
}

pub fn py_doc(value: Value) -> String {
    text(&value)
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"")
        .chars()
        .map(|c| {
            if is_control(c) && c != '\n' && c != '\t' {
                format!("\\x{:02x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

pub fn comment(value: Value) -> String {
    let text = text(&value);
    text.trim_end_matches([' ', '\t', '\r', '\n'])
        .split('\n')
        .map(|line| {
            let line: String = line
                .chars()
                .map(|c| if is_control(c) && c != '\t' { ' ' } else { c })
                .collect();
            let line = line.trim_end_matches([' ', '\t']);
            if line.is_empty() {
                "#".to_owned()
            } else {
                format!("# {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn md_cell(value: Value) -> String {
    text(&value)
        .replace("\r\n", " ")
        .replace(['\n', '\r'], " ")
        .replace('|', "\\|")
        .trim_matches([' ', '\t'])
        .to_owned()
}

/// The first line, cut after its first sentence, at most 100 characters (cut at a word, `…`).
pub fn one_line_text(s: &str) -> String {
    let s = s.trim_matches([' ', '\t', '\r', '\n']);
    let first = s.split('\n').next().unwrap_or_default();
    let mut line: Vec<char> = first.trim_matches([' ', '\t', '\r']).chars().collect();
    if let Some(i) = (0..line.len().saturating_sub(2))
        .find(|&i| line[i] == '.' && line[i + 1] == ' ' && line[i + 2].is_ascii_uppercase())
    {
        line.truncate(i + 1);
    }
    if line.len() > 100 {
        let mut cut: Vec<char> = line[..99].to_vec();
        if let Some(k) = cut.iter().rposition(|c| *c == ' ')
            && k > 0
        {
            cut.truncate(k);
        }
        let cut: String = cut.into_iter().collect();
        return format!("{}…", cut.trim_end_matches(' '));
    }
    line.into_iter().collect()
}

pub fn one_line(value: Value) -> String {
    one_line_text(&text(&value))
}

pub fn register(env: &mut minijinja::Environment<'_>) {
    env.add_filter("sh_quote", sh_quote);
    env.add_filter("py_repr", py_repr);
    env.add_filter("py_doc", py_doc);
    env.add_filter("comment", comment);
    env.add_filter("md_cell", md_cell);
    env.add_filter("one_line", one_line);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(json: serde_json::Value) -> Value {
        Value::from(minijinja::value::Serde(json))
    }

    #[test]
    fn text_is_made_safe_for_each_place() {
        assert_eq!(sh_quote(Value::from("it's $(x)")), r"'it'\''s $(x)'");
        assert_eq!(
            py_repr(v(serde_json::json!({"a": [1, null, true, "x'\n\u{1}"]}))).unwrap(),
            r"{'a': [1, None, True, 'x\'\n\x01']}"
        );
        assert_eq!(py_doc(Value::from(r#"a\b """ c"#)), r#"a\\b \"\"\" c"#);
        assert_eq!(comment(Value::from("one\n\ntwo \n")), "# one\n#\n# two");
        assert_eq!(md_cell(Value::from(" a|b\r\nc ")), r"a\|b c");
        assert_eq!(one_line_text("First. Second sentence."), "First.");
        assert_eq!(one_line_text("e.g. lower stays"), "e.g. lower stays");
        let long = "word ".repeat(30);
        let cut = one_line_text(&long);
        assert!(cut.ends_with('…') && cut.chars().count() <= 100, "{cut}");
    }
}
