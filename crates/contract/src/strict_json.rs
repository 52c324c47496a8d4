//! How every request body is read as JSON, REST and MCP alike: in one pass that refuses a
//! duplicate key at any depth (a last-wins reading would let two parsers of one body disagree),
//! nesting deeper than a bound, a string (value or key) longer than a bound, and an object or
//! array with more members than a bound. Each refusal names the JSON pointer where it happened.
//!
//! serde_json's own recursion limit (128) stays underneath as the last guard of the stack.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The bounds a body is read within (`limits` of the service's configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonLimits {
    /// Objects and arrays nested in each other; the body itself is depth 1.
    pub max_depth: usize,
    /// Bytes of one string, value or key (UTF-8).
    pub max_string_bytes: usize,
    /// Members of one object or items of one array.
    pub max_members: usize,
}

impl Default for JsonLimits {
    fn default() -> Self {
        JsonLimits {
            max_depth: 64,
            max_string_bytes: 262_144,
            max_members: 10_000,
        }
    }
}

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsonRefusal {
    #[error("Request body is not valid JSON: {0}")]
    Syntax(String),
    #[error("Request body has the key '{key}' twice in the object at '{pointer}'")]
    DuplicateKey { key: String, pointer: String },
    #[error("Request body nests deeper than {max} levels at '{pointer}'")]
    TooDeep { max: usize, pointer: String },
    #[error("Request body has a string longer than {max} bytes at '{pointer}'")]
    StringTooLong { max: usize, pointer: String },
    #[error("Request body has more than {max} members in the object or array at '{pointer}'")]
    TooManyMembers { max: usize, pointer: String },
}

impl JsonRefusal {
    /// Where in the body it happened (a JSON pointer; empty for the whole body).
    pub fn pointer(&self) -> Option<&str> {
        match self {
            JsonRefusal::Syntax(_) => None,
            JsonRefusal::DuplicateKey { pointer, .. }
            | JsonRefusal::TooDeep { pointer, .. }
            | JsonRefusal::StringTooLong { pointer, .. }
            | JsonRefusal::TooManyMembers { pointer, .. } => Some(pointer),
        }
    }
}

/// Reads `bytes` as one JSON value within `limits`.
pub fn parse(bytes: &[u8], limits: &JsonLimits) -> Result<Value, JsonRefusal> {
    let reading = Reading {
        limits,
        path: RefCell::new(Vec::new()),
        refusal: RefCell::new(None),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Node {
        reading: &reading,
        depth: 0,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    match (value, reading.refusal.into_inner()) {
        (_, Some(refusal)) => Err(refusal),
        (Ok(value), None) => Ok(value),
        (Err(e), None) if e.to_string().starts_with("recursion limit exceeded") => {
            Err(JsonRefusal::TooDeep {
                max: limits.max_depth,
                pointer: String::new(),
            })
        }
        (Err(e), None) => Err(JsonRefusal::Syntax(e.to_string())),
    }
}

/// One reading: the bounds, the path to where the reader is, and the first refusal.
struct Reading<'a> {
    limits: &'a JsonLimits,
    path: RefCell<Vec<String>>,
    refusal: RefCell<Option<JsonRefusal>>,
}

impl Reading<'_> {
    /// The JSON pointer of the current path, with `~` and `/` escaped (RFC 6901).
    fn pointer(&self) -> String {
        self.path
            .borrow()
            .iter()
            .map(|segment| format!("/{}", segment.replace('~', "~0").replace('/', "~1")))
            .collect()
    }

    /// Keeps `refusal` and stops the reading with an error the caller replaces by it.
    fn refuse<E: de::Error>(&self, refusal: impl FnOnce(String) -> JsonRefusal) -> E {
        let refusal = refusal(self.pointer());
        let message = refusal.to_string();
        self.refusal.borrow_mut().get_or_insert(refusal);
        E::custom(message)
    }

    fn check_string<E: de::Error>(&self, text: &str) -> Result<(), E> {
        let max = self.limits.max_string_bytes;
        if text.len() > max {
            return Err(self.refuse(|pointer| JsonRefusal::StringTooLong { max, pointer }));
        }
        Ok(())
    }

    fn check_members<E: de::Error>(&self, count: usize) -> Result<(), E> {
        let max = self.limits.max_members;
        if count > max {
            return Err(self.refuse(|pointer| JsonRefusal::TooManyMembers { max, pointer }));
        }
        Ok(())
    }
}

/// A value at `depth` (the number of containers around it).
#[derive(Clone, Copy)]
struct Node<'r, 'a> {
    reading: &'r Reading<'a>,
    depth: usize,
}

impl Node<'_, '_> {
    /// Entering a container: refused past the depth bound.
    fn enter<E: de::Error>(&self) -> Result<(), E> {
        let max = self.reading.limits.max_depth;
        if self.depth + 1 > max {
            return Err(self
                .reading
                .refuse(|pointer| JsonRefusal::TooDeep { max, pointer }));
        }
        Ok(())
    }

    fn child(&self) -> Self {
        Node {
            reading: self.reading,
            depth: self.depth + 1,
        }
    }

    /// Reads the next value of a container under `segment` of the path.
    fn within<T>(&self, segment: String, read: impl FnOnce(Self) -> T) -> T {
        self.reading.path.borrow_mut().push(segment);
        let out = read(self.child());
        self.reading.path.borrow_mut().pop();
        out
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.reading.check_string(v)?;
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.reading.check_string(&v)?;
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.enter()?;
        let mut items = Vec::new();
        loop {
            let index = items.len();
            let Some(item) = self.within(index.to_string(), |node| seq.next_element_seed(node))?
            else {
                break;
            };
            self.reading.check_members(index + 1)?;
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.enter()?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // A key too long is named by its object's pointer: the key itself could be huge.
            self.reading.check_string(&key)?;
            if members.contains_key(&key) {
                return Err(self.reading.refuse(|pointer| JsonRefusal::DuplicateKey {
                    key: key.clone(),
                    pointer,
                }));
            }
            self.reading.check_members(members.len() + 1)?;
            let value = self.within(key.clone(), |node| map.next_value_seed(node))?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Result<Value, JsonRefusal> {
        parse(text.as_bytes(), &JsonLimits::default())
    }

    fn small() -> JsonLimits {
        JsonLimits {
            max_depth: 3,
            max_string_bytes: 5,
            max_members: 2,
        }
    }

    #[test]
    fn well_formed_bodies_read_as_serde_json_reads_them() {
        for text in [
            r#"{"tool":"echo","arguments":{"a":[1,2.5,-3,true,null,"é\u00e9"],"b":{}}}"#,
            "[]",
            "0",
            r#""text""#,
            "1e308",
            "18446744073709551615",
            "-9223372036854775808",
            " { \"a\" : { \"a\" : 1 } } ",
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(read(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn a_duplicate_key_is_refused_at_any_depth_with_its_pointer() {
        assert_eq!(
            read(r#"{"tool":"a","tool":"b"}"#).unwrap_err(),
            JsonRefusal::DuplicateKey {
                key: "tool".into(),
                pointer: String::new()
            }
        );
        let nested = read(r#"{"arguments":{"x":[{"a/b":{"k":1,"k":2}}]}}"#).unwrap_err();
        assert_eq!(nested.pointer(), Some("/arguments/x/0/a~1b"));
        assert_eq!(
            nested,
            JsonRefusal::DuplicateKey {
                key: "k".into(),
                pointer: "/arguments/x/0/a~1b".into()
            }
        );
        // Keys equal once unescaped are the same key.
        assert!(matches!(
            read(r#"{"a":1,"\u0061":2}"#).unwrap_err(),
            JsonRefusal::DuplicateKey { .. }
        ));
    }

    #[test]
    fn depth_strings_and_members_are_bounded() {
        let limits = small();
        let read = |text: &str| parse(text.as_bytes(), &limits);
        assert!(read(r#"{"a":[{}]}"#).is_ok());
        assert_eq!(
            read(r#"{"a":[{"b":[]}]}"#).unwrap_err(),
            JsonRefusal::TooDeep {
                max: 3,
                pointer: "/a/0/b".into()
            }
        );
        assert!(read(r#"{"a":"12345"}"#).is_ok());
        assert_eq!(
            read(r#"{"a":["123456"]}"#).unwrap_err(),
            JsonRefusal::StringTooLong {
                max: 5,
                pointer: "/a/0".into()
            }
        );
        assert_eq!(
            read(r#"{"a":{"123456":1}}"#).unwrap_err(),
            JsonRefusal::StringTooLong {
                max: 5,
                pointer: "/a".into()
            }
        );
        // Exactly the bound is within it.
        assert_eq!(
            read(r#"{"a":{"x":1,"y":2}}"#).unwrap(),
            json!({"a": {"x": 1, "y": 2}})
        );
        assert_eq!(read("[1,2]").unwrap(), json!([1, 2]));
        assert_eq!(
            read(r#"{"a":{"x":1,"y":2,"z":3}}"#).unwrap_err(),
            JsonRefusal::TooManyMembers {
                max: 2,
                pointer: "/a".into()
            }
        );
        assert_eq!(
            read(r#"[1,2,3]"#).unwrap_err(),
            JsonRefusal::TooManyMembers {
                max: 2,
                pointer: String::new()
            }
        );
    }

    #[test]
    fn the_parsers_own_recursion_limit_is_a_depth_refusal_not_a_crash() {
        let limits = JsonLimits {
            max_depth: 10_000,
            ..JsonLimits::default()
        };
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(matches!(
            parse(deep.as_bytes(), &limits).unwrap_err(),
            JsonRefusal::TooDeep { .. }
        ));
    }

    #[test]
    fn syntax_errors_and_trailing_data_are_syntax_refusals() {
        for text in ["", "{", r#"{"a":1}x"#, "[1,]", "{'a':1}", "\u{feff}{}"] {
            let refusal = read(text).unwrap_err();
            assert!(matches!(refusal, JsonRefusal::Syntax(_)), "{text}");
            assert_eq!(
                refusal.pointer(),
                None,
                "no place in a body that does not parse"
            );
        }
        assert_eq!(read("{}").unwrap(), json!({}));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Any JSON value (keys unique, as a map makes them), a few levels deep.
        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|n| json!(n)),
                any::<u64>().prop_map(|n| json!(n)),
                (-1e300f64..1e300).prop_map(|f| json!(f)),
                ".{0,12}".prop_map(Value::String),
            ];
            leaf.prop_recursive(6, 64, 8, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                    prop::collection::btree_map(".{0,6}", inner, 0..8)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        fn roomy() -> JsonLimits {
            JsonLimits {
                max_depth: 100,
                max_string_bytes: 1 << 20,
                max_members: 1 << 20,
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            /// Within its bounds, strict reading is serde_json's reading (compared with
            /// serde_json's, not the written value: a float's text need not read back exactly).
            #[test]
            fn a_value_within_bounds_reads_as_serde_json_reads_it(value in json_value()) {
                let text = serde_json::to_vec(&value).unwrap();
                let expected: Value = serde_json::from_slice(&text).unwrap();
                prop_assert_eq!(parse(&text, &roomy()).unwrap(), expected);
            }

            /// A key repeated in any object is refused with that object's pointer, which
            /// resolves in the value that was written.
            #[test]
            fn a_repeated_key_is_always_found(value in json_value(), key in "[a-z]{1,4}", pick in any::<prop::sample::Index>()) {
                let mut objects = Vec::new();
                collect_objects(&value, String::new(), &mut objects);
                let Some(at) = (!objects.is_empty()).then(|| pick.get(&objects).clone()) else {
                    return Ok(());
                };
                let text = with_duplicate(&value, &at, "", &key);
                let refusal = parse(text.as_bytes(), &roomy()).unwrap_err();
                match refusal {
                    JsonRefusal::DuplicateKey { key: found, pointer } => {
                        prop_assert_eq!(found, key);
                        prop_assert_eq!(&pointer, &at);
                        prop_assert!(value.pointer(&pointer).is_some_and(Value::is_object));
                    }
                    other => prop_assert!(false, "{other:?} for {text}"),
                }
            }

            /// Any bytes: no panic; anything strict reading accepts, serde_json reads the same,
            /// and anything serde_json refuses, strict reading refuses.
            #[test]
            fn any_bytes_are_read_or_refused_never_more_leniently_than_serde_json(bytes in prop::collection::vec(any::<u8>(), 0..64), tight in any::<bool>()) {
                let limits = if tight { JsonLimits { max_depth: 2, max_string_bytes: 3, max_members: 2 } } else { roomy() };
                let strict = parse(&bytes, &limits);
                let loose = serde_json::from_slice::<Value>(&bytes);
                match (strict, loose) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                    (Ok(a), Err(e)) => prop_assert!(false, "strict read {a} where serde_json refused: {e}"),
                    (Err(_), _) => {}
                }
            }
        }

        fn collect_objects(value: &Value, at: String, out: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    out.push(at.clone());
                    for (k, v) in map {
                        let segment = k.replace('~', "~0").replace('/', "~1");
                        collect_objects(v, format!("{at}/{segment}"), out);
                    }
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        collect_objects(v, format!("{at}/{i}"), out);
                    }
                }
                _ => {}
            }
        }

        /// `value` as text, with `key` written twice at the front of the object at `target`.
        fn with_duplicate(value: &Value, target: &str, at: &str, key: &str) -> String {
            match value {
                Value::Object(map) => {
                    let mut members: Vec<String> = Vec::new();
                    if at == target {
                        members.push(format!("{}:1", json!(key)));
                        members.push(format!("{}:2", json!(key)));
                    }
                    for (k, v) in map {
                        if at == target && k == key {
                            continue;
                        }
                        let segment = k.replace('~', "~0").replace('/', "~1");
                        let inner = with_duplicate(v, target, &format!("{at}/{segment}"), key);
                        members.push(format!("{}:{inner}", json!(k)));
                    }
                    format!("{{{}}}", members.join(","))
                }
                Value::Array(items) => {
                    let inner: Vec<String> = items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| with_duplicate(v, target, &format!("{at}/{i}"), key))
                        .collect();
                    format!("[{}]", inner.join(","))
                }
                other => other.to_string(),
            }
        }
    }
}
