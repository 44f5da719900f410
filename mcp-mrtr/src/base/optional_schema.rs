//! Optional parameters as clients read them: an `Option<T>` field is a property of `T`'s
//! plain schema that is not required, not a `["T", "null"]` type array or an
//! `anyOf: [T, null]`.
//!
//! schemars writes `Option<T>` as "T or null", which is what the value's serde form is.
//! For the arguments of a call that is more than the contract needs (leaving the property
//! out is how a client says "none"), and some clients reject type arrays outright (the MCP
//! Inspector warns of it). The server still reads an explicit `null` as `None`, so a client
//! that sends one is not refused. Result schemas keep the null: a result's `None` is
//! serialized as `null`, and a client validating against a schema without it would refuse
//! the result.

use serde_json::{Map, Value};

/// Rewrites every non-required property of every object schema in `schema` to its
/// non-null form. A required property keeps its null: there the null is the contract.
pub(crate) fn without_null_options(schema: &mut Value) {
    let Value::Object(object) = schema else { return };
    let required: Vec<String> = match object.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                drop_null(property);
            }
        }
    }
    for_each_subschema(object, without_null_options);
}

/// `property` without the "or null" that `Option` added to it.
fn drop_null(property: &mut Value) {
    let Value::Object(property) = property else { return };
    if let Some(Value::Array(kinds)) = property.get_mut("type") {
        kinds.retain(|kind| kind != "null");
        if let [only] = kinds.as_mut_slice() {
            let only = only.take();
            property.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = property.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    let inner = match property.get("anyOf") {
        Some(Value::Array(options)) if options.len() == 2 => {
            let is_null = |option: &Value| {
                option.get("type") == Some(&Value::from("null")) && option.as_object().is_some_and(|o| o.len() == 1)
            };
            match (is_null(&options[0]), is_null(&options[1])) {
                (false, true) => Some(options[0].clone()),
                (true, false) => Some(options[1].clone()),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(Value::Object(inner)) = inner {
        property.remove("anyOf");
        for (key, value) in inner {
            // The property's own words (its description, say) stay over the type's.
            property.entry(key).or_insert(value);
        }
    }
}

/// Calls `visit` on each schema nested in `object` by a JSON Schema keyword.
fn for_each_subschema(object: &mut Map<String, Value>, visit: fn(&mut Value)) {
    for (keyword, value) in object.iter_mut() {
        match keyword.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Value::Object(schemas) = value {
                    schemas.values_mut().for_each(visit);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(schemas) = value {
                    schemas.iter_mut().for_each(visit);
                }
            }
            "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains" => visit(value),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn optional_properties_lose_the_null_and_required_ones_keep_it() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "days": {"type": ["integer", "null"], "format": "uint32"},
                "unit": {"description": "Which unit.", "anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]},
                "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "either": {"type": ["string", "integer", "null"]},
                "must": {"type": ["string", "null"]}
            },
            "required": ["must"],
            "$defs": {
                "Unit": {"type": "object", "properties": {"deep": {"type": ["boolean", "null"]}}}
            }
        });
        without_null_options(&mut schema);
        let properties = &schema["properties"];
        assert_eq!(properties["days"], json!({"type": "integer", "format": "uint32"}));
        assert_eq!(properties["unit"], json!({"description": "Which unit.", "$ref": "#/$defs/Unit"}));
        assert_eq!(properties["mode"], json!({"type": "string", "enum": ["a", "b"]}));
        assert_eq!(properties["either"], json!({"type": ["string", "integer"]}));
        assert_eq!(properties["must"], json!({"type": ["string", "null"]}), "required: null is the contract");
        assert_eq!(schema["$defs"]["Unit"]["properties"]["deep"], json!({"type": "boolean"}), "nested too");
    }

    #[test]
    fn an_any_of_that_is_not_t_or_null_is_left_alone() {
        let mut schema = json!({"type": "object", "properties": {
            "x": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "y": {"anyOf": [{"type": "null", "description": "none"}, {"type": "string"}]}
        }});
        let before = schema.clone();
        without_null_options(&mut schema);
        assert_eq!(schema, before);
    }
}
