//! Whether a ListCapabilities answer is well-formed, without calling anything else: names
//! present and unique, every schema JSON that compiles as JSON Schema 2020-12 (input schemas
//! required and of type object), resource URIs with a scheme, URI templates RFC 6570-shaped.

use std::collections::HashSet;

use provider_proto::v1::ListCapabilitiesResponse;
use serde_json::Value;

/// One case per listed item: Ok, or what is wrong with it.
pub fn check(caps: &ListCapabilitiesResponse) -> Vec<Result<(), String>> {
    let mut cases = Vec::new();
    let mut names = HashSet::new();
    for tool in &caps.tools {
        let what = format!("tool '{}'", tool.name);
        cases.push(
            unique(&mut names, &tool.name, "tool")
                .and_then(|()| {
                    schema(
                        &tool.input_schema_json,
                        &format!("{what}: input_schema_json"),
                        true,
                    )
                })
                .and_then(|()| {
                    optional_schema(
                        &tool.output_schema_json,
                        &format!("{what}: output_schema_json"),
                    )
                }),
        );
    }
    let mut uris = HashSet::new();
    for resource in &caps.resources {
        cases.push(
            unique(&mut uris, &resource.uri, "resource URI").and_then(|()| {
                has_scheme(&resource.uri).then_some(()).ok_or_else(|| {
                    format!(
                        "resource URI '{}' has no scheme (like hello://)",
                        resource.uri
                    )
                })
            }),
        );
    }
    let mut templates = HashSet::new();
    for template in &caps.resource_templates {
        cases.push(
            unique(&mut templates, &template.uri_template, "resource template")
                .and_then(|()| uri_template(&template.uri_template)),
        );
    }
    let mut prompts = HashSet::new();
    for prompt in &caps.prompts {
        cases.push(unique(&mut prompts, &prompt.name, "prompt").and_then(|()| {
            optional_schema(
                &prompt.args_schema_json,
                &format!("prompt '{}': args_schema_json", prompt.name),
            )
        }));
    }
    cases
}

fn unique(seen: &mut HashSet<String>, name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("a {what} has an empty name"));
    }
    if !seen.insert(name.to_owned()) {
        return Err(format!("{what} '{name}' is listed more than once"));
    }
    Ok(())
}

/// Parses and compiles a schema; `object`: it must describe an object (an arguments object).
pub fn schema(text: &str, what: &str, object: bool) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err(format!("{what} is empty (required)"));
    }
    let schema: Value =
        serde_json::from_str(text).map_err(|e| format!("{what} is not JSON: {e}"))?;
    jsonschema::draft202012::new(&schema)
        .map_err(|e| format!("{what} does not compile as JSON Schema 2020-12: {e}"))?;
    if object && schema.get("type") != Some(&Value::from("object")) {
        return Err(format!("{what} is not a schema of type object: {schema}"));
    }
    Ok(())
}

fn optional_schema(text: &str, what: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Ok(());
    }
    schema(text, what, false)
}

/// RFC 3986: `scheme ":"` with a letter first, then letters, digits, `+`, `-`, `.`.
pub fn has_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// RFC 6570's shape: a scheme before the first expression; balanced, non-empty `{…}`
/// expressions with an optional operator and comma-separated variable names, each with an
/// optional `:N` prefix or `*` explode modifier; at least one expression.
pub fn uri_template(template: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("URI template '{template}': {why}"));
    let literal_start = template.split('{').next().unwrap_or_default();
    if !has_scheme(literal_start) {
        return bad("no scheme before the first expression");
    }
    let mut rest = template;
    let mut expressions = 0;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return bad("a '}' without its '{'");
        }
        let Some(close) = rest[open..].find('}') else {
            return bad("a '{' without its '}'");
        };
        let expression = &rest[open + 1..open + close];
        let variables = expression.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        if expression.len() - variables.len() > 1 {
            return bad("more than one operator in an expression");
        }
        if variables.is_empty() {
            return bad("an empty expression");
        }
        for variable in variables.split(',') {
            let name = match variable.split_once(':') {
                Some((name, length))
                    if !length.is_empty() && length.chars().all(|c| c.is_ascii_digit()) =>
                {
                    name
                }
                Some(_) => return bad(&format!("bad prefix modifier in '{variable}'")),
                None => variable.strip_suffix('*').unwrap_or(variable),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%'))
            {
                return bad(&format!("bad variable name '{variable}'"));
            }
        }
        expressions += 1;
        rest = &rest[open + close + 1..];
    }
    if expressions == 0 {
        return bad("no {variable} expression (list it as a resource instead)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use provider_proto::v1::{Prompt, Resource, ResourceTemplate, Tool};

    use super::*;

    fn tool(name: &str, input: &str, output: &str) -> Tool {
        Tool {
            name: name.into(),
            description: String::new(),
            input_schema_json: input.into(),
            output_schema_json: output.into(),
        }
    }

    fn failures(caps: &ListCapabilitiesResponse) -> Vec<String> {
        check(caps).into_iter().filter_map(Result::err).collect()
    }

    const OBJECT: &str = r#"{"type": "object"}"#;

    #[test]
    fn a_well_formed_listing_passes() {
        let caps = ListCapabilitiesResponse {
            tools: vec![
                tool("echo.v1", OBJECT, r#"{"type": "string"}"#),
                tool("b", OBJECT, ""),
            ],
            resources: vec![Resource {
                uri: "hello://greeting".into(),
                ..Default::default()
            }],
            resource_templates: vec![ResourceTemplate {
                uri_template: "hello://greeting/{name}".into(),
                ..Default::default()
            }],
            prompts: vec![Prompt {
                name: "p".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(check(&caps).len(), 5);
        assert!(failures(&caps).is_empty(), "{:?}", failures(&caps));
    }

    #[test]
    fn every_malformation_is_a_failure() {
        let caps = ListCapabilitiesResponse {
            tools: vec![
                tool("dup", OBJECT, ""),
                tool("dup", OBJECT, ""),
                tool("", OBJECT, ""),
                tool("no-input", "", ""),
                tool("not-json", "{", ""),
                tool("not-object", r#"{"type": "string"}"#, ""),
                tool("no-compile", r#"{"type": "object", "minLength": "x"}"#, ""),
                tool("bad-output", OBJECT, r#"{"type": 5}"#),
            ],
            resources: vec![Resource {
                uri: "greeting".into(),
                ..Default::default()
            }],
            resource_templates: vec![ResourceTemplate {
                uri_template: "hello://greeting/{name".into(),
                ..Default::default()
            }],
            prompts: vec![Prompt {
                name: "p".into(),
                args_schema_json: "[".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let failures = failures(&caps);
        assert_eq!(failures.len(), 10, "{failures:#?}");
        assert!(
            failures[0].contains("'dup' is listed more than once"),
            "{failures:#?}"
        );
    }

    #[test]
    fn uri_templates() {
        for ok in [
            "hello://greeting/{name}",
            "x:/{+path}/{id:3}{?q,page*}",
            "s://{a.b}{#frag}",
        ] {
            assert!(uri_template(ok).is_ok(), "{ok}");
        }
        for bad in [
            "hello://greeting",
            "{name}",
            "hello://{}",
            "hello://{a",
            "hello://a}",
            "hello://{a b}",
            "hello://{a:x}",
            "hello://{++a}",
        ] {
            assert!(uri_template(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn schemes() {
        assert!(has_scheme("hello://x"));
        assert!(has_scheme("urn:isbn:1"));
        assert!(!has_scheme("x"));
        assert!(!has_scheme("1a://x"));
        assert!(!has_scheme("://x"));
    }
}
