//! Which URIs an RFC 6570 URI template describes: enough to tell which provider a resource URI
//! belongs to (the provider itself decides whether the URI names something).

/// Whether `uri` is one of the URIs an RFC 6570 template describes. Literal parts match
/// exactly; `{var}` matches one or more characters other than `/`, `?` and `#`; `{+var}` and
/// `{#var}` any characters; `{/var}`, `{.var}`, `{;var}` their prefix and a segment; `{?…}` and
/// `{&…}` an optional query part. Enough to tell which provider a URI belongs to; the provider
/// itself decides whether the URI names something.
pub fn template_matches(template: &str, uri: &str) -> bool {
    #[derive(Clone, Copy)]
    enum Part<'a> {
        Literal(&'a str),
        /// A variable: its prefix character (if any), whether it may be empty, and whether it
        /// may contain `/`, `?`, `#`.
        Var {
            prefix: Option<char>,
            optional: bool,
            reserved: bool,
        },
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let Some(end) = rest.find('}') else {
                    parts.push(Part::Literal(rest));
                    break;
                };
                let op = rest[1..end].chars().next();
                parts.push(match op {
                    Some('+') | Some('#') => Part::Var {
                        prefix: (op == Some('#')).then_some('#'),
                        optional: false,
                        reserved: true,
                    },
                    Some(c @ ('/' | '.' | ';')) => Part::Var {
                        prefix: Some(c),
                        optional: false,
                        reserved: false,
                    },
                    Some('?') | Some('&') => Part::Var {
                        prefix: op,
                        optional: true,
                        reserved: true,
                    },
                    _ => Part::Var {
                        prefix: None,
                        optional: false,
                        reserved: false,
                    },
                });
                rest = &rest[end + 1..];
            }
            Some(i) => {
                parts.push(Part::Literal(&rest[..i]));
                rest = &rest[i..];
            }
            None => {
                parts.push(Part::Literal(rest));
                rest = "";
            }
        }
    }
    fn go(parts: &[Part<'_>], uri: &str) -> bool {
        let Some((first, more)) = parts.split_first() else {
            return uri.is_empty();
        };
        match *first {
            Part::Literal(l) => uri.strip_prefix(l).is_some_and(|u| go(more, u)),
            Part::Var {
                prefix,
                optional,
                reserved,
            } => {
                if optional && go(more, uri) {
                    return true;
                }
                let body = match prefix {
                    Some(p) => match uri.strip_prefix(p) {
                        Some(b) => b,
                        None => return false,
                    },
                    None => uri,
                };
                // Every non-empty value the variable could take, shortest first.
                for (i, c) in body.char_indices() {
                    if !reserved && matches!(c, '/' | '?' | '#') {
                        return false;
                    }
                    let end = i + c.len_utf8();
                    if go(more, &body[end..]) {
                        return true;
                    }
                }
                false
            }
        }
    }
    go(&parts, uri)
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn uri_templates_match_what_they_describe() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(template_matches(t, "demo://resource/dynamic/text/1"));
        assert!(template_matches(t, "demo://resource/dynamic/text/abc"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/1/2"));
        assert!(!template_matches(t, "demo://resource/dynamic/blob/1"));
        assert!(template_matches(
            "hello://greeting/{name}",
            "hello://greeting/ana"
        ));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("x://{a}/{b}", "x://1/2"));
        assert!(!template_matches("x://{a}/{b}", "x://1"));
        assert!(template_matches("x://s{?q,r}", "x://s"));
        assert!(template_matches("x://s{?q,r}", "x://s?q=1&r=2"));
        assert!(template_matches("x://fixed", "x://fixed"));
        assert!(!template_matches("x://fixed", "x://fixed2"));
    }
}
