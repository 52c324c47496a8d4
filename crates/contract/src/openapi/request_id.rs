//! The request-id rule as the document publishes it: the pattern the server's rule is, the
//! `X-Request-Id` header and parameter, and the constraint put on the `request_id` fields of
//! the derived schemas.

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{HeaderBuilder, RefOr, Schema};

/// What the server accepts as a request id ([`crate::envelope::is_uuid_v4`]), as a pattern: a
/// hyphenated UUID of version 4 and the RFC 4122/9562 variant, in any case. Published with
/// `minLength`/`maxLength` 36 as well, so that engines whose `$` also matches before a final
/// newline (Python's) cannot read it as accepting one. A test holds pattern and rule equal.
pub const REQUEST_ID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";

/// The rule in words, for the descriptions of the header and the body field.
pub(super) const REQUEST_ID_RULE: &str = "A UUID v4 in the hyphenated form, any case (version nibble `4`, \
    variant nibble `8`, `9`, `a` or `b`); anything else is refused with 400 INVALID_REQUEST.";

pub(super) fn request_id_header() -> utoipa::openapi::Header {
    HeaderBuilder::new()
        .schema(request_id_schema())
        .description(Some(
            "The request id of this request (the same as the body's `request_id`).",
        ))
        .build()
}

/// A request id as the server accepts it: [`REQUEST_ID_PATTERN`], 36 characters.
pub(super) fn request_id_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Uuid,
        )))
        .pattern(Some(REQUEST_ID_PATTERN))
        .min_length(Some(36))
        .max_length(Some(36))
}

/// Puts the request-id rule on the `request_id` property of a derived schema (the derive
/// knows the format, not the pattern).
pub(super) fn constrain_request_id(mut schema: RefOr<Schema>) -> RefOr<Schema> {
    if let RefOr::T(Schema::Object(object)) = &mut schema
        && let Some(RefOr::T(Schema::Object(field))) = object.properties.get_mut("request_id")
    {
        field.pattern = Some(REQUEST_ID_PATTERN.into());
        field.min_length = Some(36);
        field.max_length = Some(36);
        let said = field.description.take().unwrap_or_default();
        field.description = Some(format!("{said} {REQUEST_ID_RULE}").trim().to_owned());
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::openapi::document_json;
    use crate::openapi::examples::EXAMPLE_REQUEST_ID;

    /// The published `request_id` schema (pattern and lengths) and the server's rule
    /// ([`crate::envelope::is_uuid_v4`]) agree on every id tried: generated ids in every case,
    /// each version and variant nibble, every position changed to characters around the
    /// edges of the rule, and the other forms a UUID parser knows.
    #[test]
    fn the_published_request_id_rule_is_the_servers() {
        let doc = document_json();
        let published = &doc["components"]["schemas"]["Envelope"]["properties"]["request_id"];
        let validator = jsonschema::validator_for(published).unwrap();
        let mut ids: Vec<String> = vec![
            String::new(),
            "nope".into(),
            format!("{{{EXAMPLE_REQUEST_ID}}}"),
            format!("urn:uuid:{EXAMPLE_REQUEST_ID}"),
            EXAMPLE_REQUEST_ID.replace('-', ""),
            format!("{EXAMPLE_REQUEST_ID}\n"),
            format!(" {EXAMPLE_REQUEST_ID}"),
            format!("{EXAMPLE_REQUEST_ID}0"),
        ];
        for _ in 0..50 {
            let id = uuid::Uuid::new_v4().to_string();
            ids.push(id.to_uppercase());
            let mixed: String = id
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            ids.push(mixed);
            ids.push(id);
        }
        for nibble in "0123456789abcdefABCDEFgG-".chars() {
            for position in 0..EXAMPLE_REQUEST_ID.len() {
                let mut id: Vec<char> = EXAMPLE_REQUEST_ID.chars().collect();
                id[position] = nibble;
                ids.push(id.into_iter().collect());
            }
        }
        // A multi-byte character where a hex digit goes: 36 characters, 37 bytes.
        ids.push(EXAMPLE_REQUEST_ID.replacen('3', "é", 1));
        let mut accepted = 0;
        for id in &ids {
            let rule = crate::envelope::is_uuid_v4(id);
            assert_eq!(validator.is_valid(&json!(id)), rule, "{id:?}");
            accepted += usize::from(rule);
        }
        // Both sides of the rule were tried.
        assert!(accepted >= 150 && ids.len() - accepted >= 100, "{accepted}");
    }

    /// Every place a request id appears states the rule: the body fields, the `X-Request-Id`
    /// parameter, and the `X-Request-Id` header of every response.
    #[test]
    fn every_request_id_states_the_pattern() {
        let doc = document_json();
        let mut seen = 0;
        for schema in doc["components"]["schemas"].as_object().unwrap().values() {
            if let Some(field) = schema["properties"].get("request_id") {
                assert_eq!(field["pattern"], REQUEST_ID_PATTERN, "{schema}");
                seen += 1;
            }
        }
        assert_eq!(seen, 3, "Envelope, ToolRequest and StatusFailure");
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let header = op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == "X-Request-Id")
                    .unwrap_or_else(|| panic!("{method} {path}: no X-Request-Id parameter"));
                assert_eq!(header["schema"]["pattern"], REQUEST_ID_PATTERN);
                for (status, response) in op["responses"].as_object().unwrap() {
                    assert_eq!(
                        response["headers"]["X-Request-Id"]["schema"]["pattern"],
                        REQUEST_ID_PATTERN,
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}
