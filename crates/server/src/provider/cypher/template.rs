//! A Cypher query with `{{ name }}` slots for integers the tool's schema bounds. Checked when
//! the configuration is loaded; filled, after the arguments passed validation, with the
//! integer checked once more against its bounds.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// An argument name, with its inclusive bounds.
    Bound {
        name: String,
        min: i64,
        max: i64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct QueryTemplate {
    pieces: Vec<Piece>,
}

/// Why a query text or its arguments do not fit the template rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("an unclosed '{{{{' in the query")]
    Unclosed,
    #[error(
        "'{{{{ {0} }}}}' in the query: only integer arguments bounded by minimum and maximum in input_schema may be written into the query text; pass everything else as a $parameter"
    )]
    Unbounded(String),
    #[error("'{{{{ {0} }}}}' in the query must name an integer argument (type: integer)")]
    NotInteger(String),
    #[error("'{name}' must be an integer from {min} to {max}")]
    OutOfBounds { name: String, min: i64, max: i64 },
}

impl QueryTemplate {
    /// Accepts `{{ name }}` only where `name` is an integer property with `minimum` and
    /// `maximum` in the schema; anything else in `{{ }}` is a configuration error.
    pub fn parse(text: &str, schema: &Value) -> Result<QueryTemplate, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            pieces.push(Piece::Text(rest[..open].to_owned()));
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let name = after[..close].trim();
            let property = &schema["properties"][name];
            let is_identifier =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            let (Some(min), Some(max)) =
                (property["minimum"].as_i64(), property["maximum"].as_i64())
            else {
                return Err(TemplateError::Unbounded(name.to_owned()));
            };
            if !is_identifier || property["type"] != "integer" {
                return Err(TemplateError::NotInteger(name.to_owned()));
            }
            pieces.push(Piece::Bound {
                name: name.to_owned(),
                min,
                max,
            });
            rest = &after[close + 2..];
        }
        pieces.push(Piece::Text(rest.to_owned()));
        Ok(QueryTemplate { pieces })
    }

    /// The query text with every slot filled.
    pub fn render(&self, args: &Map<String, Value>) -> Result<String, TemplateError> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Bound { name, min, max } => match args.get(name).and_then(Value::as_i64) {
                    Some(n) if (*min..=*max).contains(&n) => out.push_str(&n.to_string()),
                    _ => {
                        return Err(TemplateError::OutOfBounds {
                            name: name.clone(),
                            min: *min,
                            max: *max,
                        });
                    }
                },
            }
        }
        Ok(out)
    }

    /// True when the query may write (CREATE, MERGE, SET, DELETE, REMOVE): such tools are not
    /// annotated read-only.
    pub fn writes(&self) -> bool {
        self.pieces.iter().any(|p| match p {
            Piece::Text(t) => {
                let upper = t.to_ascii_uppercase();
                ["CREATE ", "MERGE ", " SET ", "DELETE ", "REMOVE "]
                    .iter()
                    .any(|w| upper.contains(w))
            }
            Piece::Bound { .. } => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "max_depth": {"type": "integer", "minimum": 1, "maximum": 10},
            "name": {"type": "string"},
            "unbounded": {"type": "integer", "minimum": 1}
        }})
    }

    #[test]
    fn bounded_integers_are_written_in() {
        let t = QueryTemplate::parse(
            "MATCH p=(a)-[:CALLS*1..{{ max_depth }}]->(b {n: $name}) RETURN p",
            &schema(),
        )
        .unwrap();
        let args = json!({"max_depth": 4, "name": "x"});
        assert_eq!(
            t.render(args.as_object().unwrap()).unwrap(),
            "MATCH p=(a)-[:CALLS*1..4]->(b {n: $name}) RETURN p"
        );
        let args = json!({"max_depth": 11});
        assert!(t.render(args.as_object().unwrap()).is_err());
        assert!(!t.writes());
    }

    #[test]
    fn anything_else_in_braces_is_refused() {
        assert!(
            QueryTemplate::parse("RETURN {{ name }}", &schema())
                .unwrap_err()
                .to_string()
                .contains("only integer arguments bounded")
        );
        assert!(QueryTemplate::parse("RETURN {{ unbounded }}", &schema()).is_err());
        assert!(QueryTemplate::parse("RETURN {{ missing }}", &schema()).is_err());
        assert!(QueryTemplate::parse("RETURN {{ max_depth", &schema()).is_err());
        assert!(
            QueryTemplate::parse("CREATE (n) RETURN n", &schema())
                .unwrap()
                .writes()
        );
    }
}
