//! Bolt values as JSON: scalars as themselves, nodes as `{element_id, labels, properties}`,
//! relationships as `{element_id, type, start, end, properties}`, paths as
//! `{nodes, relationships}`, temporal values as ISO-8601 strings where possible.

use std::collections::HashMap;

use neo4rs::BoltType;
use serde_json::{Map, Value, json};

/// One result row as a JSON object, columns as keys.
pub fn row_to_json(row: HashMap<String, BoltType>) -> Value {
    Value::Object(row.into_iter().map(|(k, v)| (k, to_json(&v))).collect())
}

fn map_to_json(map: &neo4rs::BoltMap) -> Value {
    Value::Object(
        map.value
            .iter()
            .map(|(k, v)| (k.value.clone(), to_json(v)))
            .collect::<Map<String, Value>>(),
    )
}

pub fn to_json(value: &BoltType) -> Value {
    match value {
        BoltType::Null(_) => Value::Null,
        BoltType::Boolean(b) => json!(b.value),
        BoltType::Integer(i) => json!(i.value),
        BoltType::Float(f) => serde_json::Number::from_f64(f.value)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        BoltType::String(s) => json!(s.value),
        BoltType::List(list) => Value::Array(list.value.iter().map(to_json).collect()),
        BoltType::Map(map) => map_to_json(map),
        BoltType::Node(node) => json!({
            "element_id": node.id.value.to_string(),
            "labels": node.labels.value.iter().map(to_json).collect::<Vec<_>>(),
            "properties": map_to_json(&node.properties),
        }),
        BoltType::Relation(rel) => json!({
            "element_id": rel.id.value.to_string(),
            "type": rel.typ.value,
            "start": rel.start_node_id.value.to_string(),
            "end": rel.end_node_id.value.to_string(),
            "properties": map_to_json(&rel.properties),
        }),
        BoltType::UnboundedRelation(rel) => json!({
            "element_id": rel.id.value.to_string(),
            "type": rel.typ.value,
            "properties": map_to_json(&rel.properties),
        }),
        BoltType::Path(path) => json!({
            "nodes": path.nodes.value.iter().map(to_json).collect::<Vec<_>>(),
            "relationships": path.rels.value.iter().map(to_json).collect::<Vec<_>>(),
        }),
        BoltType::Bytes(b) => Value::Array(b.value.iter().map(|byte| json!(byte)).collect()),
        BoltType::Point2D(p) => json!({"srid": p.sr_id.value, "x": p.x.value, "y": p.y.value}),
        BoltType::Point3D(p) => {
            json!({"srid": p.sr_id.value, "x": p.x.value, "y": p.y.value, "z": p.z.value})
        }
        // Temporal values: neo4rs reads them into chrono types through serde.
        other => temporal(other),
    }
}

fn temporal(value: &BoltType) -> Value {
    let as_string = |v: Result<String, _>| v.map(Value::String).unwrap_or(Value::Null);
    match value {
        BoltType::Date(d) => as_string(
            chrono::NaiveDate::try_from(d)
                .map(|d| d.to_string())
                .map_err(|_| ()),
        ),
        BoltType::LocalDateTime(d) => as_string(
            chrono::NaiveDateTime::try_from(d)
                .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.f").to_string())
                .map_err(|_| ()),
        ),
        BoltType::DateTime(d) => as_string(
            chrono::DateTime::<chrono::FixedOffset>::try_from(d)
                .map(|d| d.to_rfc3339())
                .map_err(|_| ()),
        ),
        BoltType::Duration(d) => json!(format!(
            "PT{}S",
            std::time::Duration::from(d.clone()).as_secs_f64()
        )),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_lists_and_maps() {
        let v = BoltType::try_from(json!({"a": [1, 2.5, "x", null, true]})).unwrap();
        assert_eq!(to_json(&v), json!({"a": [1, 2.5, "x", null, true]}));
    }
}
