//! An upstream's `WWW-Authenticate` challenge (RFC 9110 11.6.1, RFC 6750 3) summed up for an
//! error message: its scheme and the `error` and `error_description` parameters, nothing else
//! (a realm or resource_metadata URL adds nothing for the caller, and the header is the
//! upstream's text: it is bounded and stripped of control characters).

/// `401 Bearer error="invalid_token" error_description="…"`, from a 401's header (absent: `401`).
pub fn summary(status: u16, header: Option<&str>) -> String {
    let Some(header) = header.map(str::trim).filter(|h| !h.is_empty()) else {
        return status.to_string();
    };
    let raw = header
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .unwrap_or_default();
    let scheme: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-._~+/".contains(*c))
        .take(40)
        .collect();
    let params = parameters(&header[raw.len()..]);
    let mut out = format!("{status} {scheme}");
    for name in ["error", "error_description"] {
        if let Some((_, value)) = params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
            let value: String = value
                .chars()
                .filter(|c| !c.is_control())
                .take(200)
                .collect();
            out.push_str(&format!(" {name}={value:?}"));
        }
    }
    out
}

/// `name=value` and `name="quoted \"value\""` pairs, in order.
fn parameters(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim().to_owned();
        rest = rest[eq + 1..].trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            rest = &quoted[end.min(quoted.len())..];
            value
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let value = rest[..end].trim().to_owned();
            rest = &rest[end..];
            value
        };
        // A name with spaces is a second challenge's scheme and first parameter: stop there.
        if name.contains(char::is_whitespace) {
            break;
        }
        out.push((name, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_summed_up_by_scheme_error_and_description() {
        assert_eq!(
            summary(
                401,
                Some(
                    r#"Bearer realm="api", error="invalid_token", error_description="The token \"expired\"""#
                )
            ),
            r#"401 Bearer error="invalid_token" error_description="The token \"expired\"""#
        );
        assert_eq!(
            summary(401, Some("Bearer error=insufficient_scope, scope=\"a b\"")),
            r#"401 Bearer error="insufficient_scope""#
        );
        assert_eq!(
            summary(
                401,
                Some(r#"Bearer resource_metadata="https://h/.well-known/x""#)
            ),
            "401 Bearer"
        );
        assert_eq!(summary(401, Some("Basic realm=\"x\"")), "401 Basic");
        assert_eq!(summary(401, None), "401");
        assert_eq!(summary(401, Some("  ")), "401");
    }

    #[test]
    fn a_hostile_challenge_is_bounded_and_without_control_characters() {
        let long = format!("Bearer error=\"{}\nX-Injected: 1\"", "a".repeat(1000));
        let out = summary(401, Some(&long));
        assert!(!out.contains('\n') && out.len() < 300, "{out}");
        let out = summary(401, Some("Bearer error=\"unterminated"));
        assert_eq!(out, r#"401 Bearer error="unterminated""#);
        // A second challenge's parameters are not read as the first one's.
        let out = summary(
            401,
            Some("Basic realm=\"x\", Bearer error=\"invalid_token\""),
        );
        assert_eq!(out, "401 Basic");
    }
}
