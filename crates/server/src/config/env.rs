//! `${VAR}` and `${VAR:-default}` in configuration values, expanded from the environment when a
//! provider or dependency is built (not at load, so `check-config` needs no secrets).

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    #[error("unclosed '${{' in '{value}'")]
    Unclosed { value: String },
    #[error("environment variable {name} is not set (used in '{value}')")]
    Unset { name: String, value: String },
}

/// Expands `${VAR}` and `${VAR:-default}` from the environment; an unset variable without a
/// default is an error naming it.
pub fn expand_env(value: &str) -> Result<String, EnvError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| EnvError::Unclosed {
            value: value.to_owned(),
        })?;
        let expr = &after[..end];
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        match (std::env::var(name), default) {
            (Ok(v), _) if !v.is_empty() => out.push_str(&v),
            (_, Some(d)) => out.push_str(d),
            (Ok(v), None) => out.push_str(&v),
            (Err(_), None) => {
                return Err(EnvError::Unset {
                    name: name.to_owned(),
                    value: value.to_owned(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        // SAFETY: single-threaded test touching a variable no other test reads.
        unsafe { std::env::set_var("MHG_TEST_EXPAND", "v") };
        assert_eq!(expand_env("a-${MHG_TEST_EXPAND}-b").unwrap(), "a-v-b");
        assert_eq!(expand_env("${MHG_TEST_UNSET_X:-dflt}").unwrap(), "dflt");
        assert!(
            expand_env("${MHG_TEST_UNSET_X}")
                .unwrap_err()
                .to_string()
                .contains("MHG_TEST_UNSET_X is not set")
        );
        assert_eq!(expand_env("plain").unwrap(), "plain");
    }

    /// As the shell's `${VAR:-default}`: a variable set but empty takes the default; without a
    /// default it expands to nothing, and a set value wins over a default.
    #[test]
    fn an_empty_variable_takes_the_default_and_a_set_one_wins() {
        // SAFETY: variables no other test reads.
        unsafe {
            std::env::set_var("MHG_TEST_EMPTY", "");
            std::env::set_var("MHG_TEST_SET", "set");
        }
        assert_eq!(expand_env("${MHG_TEST_EMPTY:-d}").unwrap(), "d");
        assert_eq!(expand_env("<${MHG_TEST_EMPTY}>").unwrap(), "<>");
        assert_eq!(expand_env("${MHG_TEST_SET:-d}").unwrap(), "set");
    }

    #[test]
    fn text_around_and_between_expansions_is_kept() {
        // SAFETY: a variable no other test reads.
        unsafe { std::env::set_var("MHG_TEST_AROUND", "x") };
        assert_eq!(
            expand_env("http://h:${MHG_TEST_AROUND}/p/${MHG_TEST_UNSET_Y:-q}?").unwrap(),
            "http://h:x/p/q?"
        );
        assert_eq!(
            expand_env("abc${MHG_TEST_AROUND").unwrap_err(),
            EnvError::Unclosed {
                value: "abc${MHG_TEST_AROUND".into()
            }
        );
    }
}
