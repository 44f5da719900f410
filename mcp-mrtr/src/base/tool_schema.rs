//! A tool's generated schemas as clients read them. Two doors: [`for_input`] and
//! [`for_output`].
//!
//! Both leave out what a strict validator refuses to compile: the `$schema` line (MCP reads
//! a schema without one as 2020-12, and a draft-07 validator, the MCP Inspector's among
//! them, fails on the 2020-12 URI), and schemars' own numeric formats (`int32`, `uint64`,
//! `double`, …), which are in no JSON Schema vocabulary; a bounded one becomes the
//! `minimum`/`maximum` it stands for.
//!
//! The input schema also writes optional parameters as clients read them: an `Option<T>`
//! field is a property of `T`'s plain schema that is not required, not a `["T", "null"]`
//! type array or an `anyOf: [T, null]`. schemars writes `Option<T>` as "T or null", which
//! is what the value's serde form is.
//! For the arguments of a call that is more than the contract needs (leaving the property
//! out is how a client says "none"), and some clients reject type arrays outright (the MCP
//! Inspector warns of it). The server still reads an explicit `null` as `None`, so a client
//! that sends one is not refused. Result schemas keep the null: a result's `None` is
//! serialized as `null`, and a client validating against a schema without it would refuse
//! the result. They write it as `anyOf: [T, {"type": "null"}]` instead of a type array,
//! which strict clients warn about (the MCP Inspector does).

use serde_json::{Map, Value};

/// A generated input schema, ready to list (see the module docs).
pub(crate) fn for_input(schema: &mut Value) {
    standard(schema);
    without_null_options(schema);
}

/// A generated output schema, ready to list: its nulls stay, as `anyOf` (see the module docs).
pub(crate) fn for_output(schema: &mut Value) {
    standard(schema);
    nulls_as_any_of(schema);
}

/// What both schemas lose: the `$schema` line and schemars' own formats.
fn standard(schema: &mut Value) {
    if let Value::Object(object) = schema {
        object.remove("$schema");
    }
    standard_formats(schema);
}

/// Words about a schema rather than about its values: they stay beside an `anyOf`.
const ANNOTATIONS: [&str; 8] =
    ["title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"];

/// Rewrites `"type": [T, "null"]`, here and nested, as `anyOf: [{"type": T, …}, {"type":
/// "null"}]`: the same values, without a type array.
fn nulls_as_any_of(schema: &mut Value) {
    let Value::Object(object) = schema else { return };
    for_each_subschema(object, nulls_as_any_of);
    let Some(Value::Array(kinds)) = object.get("type") else { return };
    let others: Vec<Value> = kinds.iter().filter(|kind| *kind != "null").cloned().collect();
    let [only] = others.as_slice() else { return };
    if kinds.len() != 2 {
        return;
    }
    let mut branch = Map::new();
    for (keyword, value) in std::mem::take(object) {
        if ANNOTATIONS.contains(&keyword.as_str()) {
            object.insert(keyword, value);
        } else {
            branch.insert(keyword, value);
        }
    }
    branch.insert("type".into(), only.clone());
    if let Some(Value::Array(values)) = branch.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    object.insert("anyOf".into(), Value::Array(vec![Value::Object(branch), serde_json::json!({"type": "null"})]));
}

/// Replaces schemars' numeric formats in `schema` and everything nested in it.
fn standard_formats(schema: &mut Value) {
    let Value::Object(object) = schema else { return };
    let bounds: Option<(i64, i64)> = match object.get("format").and_then(Value::as_str) {
        Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
        Some("uint32") => Some((0, u32::MAX.into())),
        // The rest say no more than the type and the bounds schemars writes beside them
        // (an 8- or 16-bit integer's range, an unsigned one's `minimum: 0`).
        Some(
            "int8" | "int16" | "int64" | "int128" | "int" | "uint8" | "uint16" | "uint64" | "uint128" | "uint"
            | "float" | "double",
        ) => None,
        _ => {
            for_each_subschema(object, standard_formats);
            return;
        }
    };
    object.remove("format");
    if let Some((min, max)) = bounds {
        object.entry("minimum").or_insert(Value::from(min));
        object.entry("maximum").or_insert(Value::from(max));
    }
}

/// Rewrites every non-required property of every object schema in `schema` to its
/// non-null form. A required property keeps its null: there the null is the contract.
fn without_null_options(schema: &mut Value) {
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
        for_input(&mut schema);
        let properties = &schema["properties"];
        assert_eq!(properties["days"], json!({"type": "integer", "minimum": 0, "maximum": u32::MAX}));
        assert_eq!(properties["unit"], json!({"description": "Which unit.", "$ref": "#/$defs/Unit"}));
        assert_eq!(properties["mode"], json!({"type": "string", "enum": ["a", "b"]}));
        assert_eq!(properties["either"], json!({"type": ["string", "integer"]}));
        assert_eq!(properties["must"], json!({"type": ["string", "null"]}), "required: null is the contract");
        assert_eq!(schema["$defs"]["Unit"]["properties"]["deep"], json!({"type": "boolean"}), "nested too");
    }

    #[test]
    fn schemas_lose_what_strict_validators_refuse_and_keep_their_bounds() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "a": {"type": "integer", "format": "int32"},
                "b": {"type": "integer", "format": "uint32", "minimum": 0},
                "c": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                "d": {"type": "number", "format": "double"},
                "e": {"type": "string", "format": "email"},
                "f": {"type": "array", "items": {"type": "integer", "format": "uint64", "minimum": 0}}
            }
        });
        for_output(&mut schema);
        assert!(schema.get("$schema").is_none(), "a schema without one is 2020-12 in MCP");
        let properties = &schema["properties"];
        assert_eq!(properties["a"], json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}));
        assert_eq!(properties["b"], json!({"type": "integer", "minimum": 0, "maximum": u32::MAX}));
        assert_eq!(properties["c"], json!({"type": "integer", "minimum": 0, "maximum": 255}));
        assert_eq!(properties["d"], json!({"type": "number"}));
        assert_eq!(properties["e"], json!({"type": "string", "format": "email"}), "a standard format stays");
        assert_eq!(properties["f"]["items"], json!({"type": "integer", "minimum": 0}));
    }

    #[test]
    fn output_schemas_keep_their_nulls_without_type_arrays() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "note": {"description": "A note.", "type": ["string", "null"], "maxLength": 80},
                "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "count": {"type": ["integer", "null"], "format": "uint32"},
                "either": {"type": ["string", "integer", "null"]},
                "items": {"type": "array", "items": {"type": ["boolean", "null"]}}
            }
        });
        for_output(&mut schema);
        let properties = &schema["properties"];
        assert_eq!(
            properties["note"],
            json!({"description": "A note.", "anyOf": [{"type": "string", "maxLength": 80}, {"type": "null"}]})
        );
        assert_eq!(properties["mode"], json!({"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]}));
        assert_eq!(
            properties["count"],
            json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": u32::MAX}, {"type": "null"}]})
        );
        assert_eq!(properties["either"], json!({"type": ["string", "integer", "null"]}), "not T-or-null: left");
        assert_eq!(properties["items"]["items"], json!({"anyOf": [{"type": "boolean"}, {"type": "null"}]}));
    }

    #[test]
    fn an_any_of_that_is_not_t_or_null_is_left_alone() {
        let mut schema = json!({"type": "object", "properties": {
            "x": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "y": {"anyOf": [{"type": "null", "description": "none"}, {"type": "string"}]}
        }});
        let before = schema.clone();
        for_input(&mut schema);
        assert_eq!(schema, before);
    }
}
