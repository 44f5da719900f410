//! Turning a schemars schema into an elicitation form's `requestedSchema`: a flat object
//! whose properties are strings, numbers, integers, booleans or enums, keeping only the
//! keywords elicitation defines.

use serde_json::{json, Map, Value};

const STRING_FORMATS: &[&str] = &["email", "uri", "date", "date-time"];

/// The form schema for `schema` (a schemars root schema), or why it cannot be a form.
pub(crate) fn from_schemars(schema: &Value) -> Result<Value, String> {
    let defs = schema.get("$defs").cloned().unwrap_or_else(|| json!({}));
    if schema.get("type") != Some(&json!("object")) {
        return Err("a form must be a struct with named fields".into());
    }
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut form_properties = Map::new();
    for (name, property) in &properties {
        let property = property_schema(&defs, property).map_err(|e| format!("property `{name}` {e}"))?;
        form_properties.insert(name.clone(), property);
    }
    let mut form = json!({ "type": "object", "properties": form_properties });
    if let Some(required) = schema.get("required").filter(|r| r.as_array().is_some_and(|r| !r.is_empty())) {
        form["required"] = required.clone();
    }
    Ok(form)
}

fn property_schema(defs: &Value, declared: &Value) -> Result<Value, String> {
    let property = nullable_inner(resolve(defs, declared));
    let property = resolve(defs, property);
    let kind = property.get("type").and_then(single_type);
    let mut out = Map::new();
    copy(property, &mut out, &["title", "description", "default"]);
    // A field's own docs and default sit beside its `$ref`, and win over the type's.
    copy(declared, &mut out, &["title", "description", "default"]);
    match kind {
        Some("string") => {
            out.insert("type".into(), json!("string"));
            // `enumNames` is the deprecated way to title enum values; some clients still read it.
            copy(property, &mut out, &["minLength", "maxLength", "enum"]);
            copy(declared, &mut out, &["enumNames"]);
            if let Some(format) =
                property.get("format").filter(|f| f.as_str().is_some_and(|f| STRING_FORMATS.contains(&f)))
            {
                out.insert("format".into(), format.clone());
            }
            if let Some(one_of) = property.get("oneOf") {
                out.insert("oneOf".into(), titled_options(one_of)?);
            }
        }
        Some(number @ ("number" | "integer")) => {
            out.insert("type".into(), json!(number));
            copy(property, &mut out, &["minimum", "maximum"]);
        }
        Some("boolean") => {
            out.insert("type".into(), json!("boolean"));
        }
        Some("array") => {
            let items = resolve(defs, property.get("items").ok_or("is an array without items")?);
            let items = enum_items(items).ok_or("is an array; forms only take arrays of enum values")?;
            out.insert("type".into(), json!("array"));
            out.insert("items".into(), items);
            copy(property, &mut out, &["minItems", "maxItems"]);
        }
        None if property.get("oneOf").is_some() => {
            out.insert("type".into(), json!("string"));
            out.insert("oneOf".into(), titled_options(&property["oneOf"])?);
        }
        other => {
            return Err(format!(
                "is {}; forms take strings, numbers, integers, booleans and enums",
                other.map_or_else(|| "not a primitive".to_owned(), |t| format!("of type {t}"))
            ))
        }
    }
    Ok(Value::Object(out))
}

/// Follows a local `$ref` into `$defs`.
fn resolve<'a>(defs: &'a Value, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .unwrap_or(schema)
}

/// `Option<T>` is `T` or null: the form field is simply not required.
fn nullable_inner(schema: &Value) -> &Value {
    match schema.get("anyOf").and_then(Value::as_array) {
        Some(options) if options.len() == 2 => {
            options.iter().find(|o| o.get("type") != Some(&json!("null"))).unwrap_or(schema)
        }
        _ => schema,
    }
}

/// `"string"`, or `["string", "null"]` for an optional field.
fn single_type(kind: &Value) -> Option<&str> {
    match kind {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let mut kinds = kinds.iter().filter_map(Value::as_str).filter(|k| *k != "null");
            let kind = kinds.next()?;
            kinds.next().is_none().then_some(kind)
        }
        _ => None,
    }
}

/// Enum variants documented with `///` come out of schemars as `oneOf` of `const`s;
/// elicitation wants `{const, title}`.
fn titled_options(one_of: &Value) -> Result<Value, String> {
    let options = one_of.as_array().ok_or("has a malformed oneOf")?;
    options
        .iter()
        .map(|o| {
            let value = o
                .get("const")
                .or_else(|| o.get("enum").and_then(|e| e.get(0)))
                .ok_or("mixes enum and data variants")?;
            let title = o.get("title").or_else(|| o.get("description")).unwrap_or(value);
            Ok(json!({ "const": value, "title": title }))
        })
        .collect::<Result<Vec<_>, &str>>()
        .map(Value::Array)
        .map_err(str::to_owned)
}

fn enum_items(items: &Value) -> Option<Value> {
    if let Some(values) = items.get("enum") {
        return Some(json!({ "type": "string", "enum": values }));
    }
    let options = titled_options(items.get("oneOf")?).ok()?;
    Some(json!({ "anyOf": options }))
}

fn copy(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key) {
            to.insert((*key).to_owned(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::mrtr::question::ElicitForm;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Name {
        name: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Color {
        Red,
        Green,
    }

    /// A booking.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Booking {
        /// How many people.
        size: u8,
        ok: bool,
        note: Option<String>,
        color: Color,
        colors: Vec<Color>,
        ratio: f64,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        name: Name,
    }

    #[test]
    fn a_one_field_struct_is_the_minimal_form() {
        assert_eq!(
            Name::requested_schema().unwrap(),
            json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] })
        );
    }

    #[test]
    fn primitives_options_and_enums_map_to_form_properties() {
        let form = Booking::requested_schema().unwrap();
        let p = &form["properties"];
        assert_eq!(p["size"]["type"], "integer");
        assert_eq!(p["size"]["description"], "How many people.");
        assert_eq!(p["ok"], json!({ "type": "boolean" }));
        assert_eq!(p["note"], json!({ "type": "string" }));
        assert_eq!(p["color"], json!({ "type": "string", "enum": ["Red", "Green"] }));
        assert_eq!(p["colors"]["items"], json!({ "type": "string", "enum": ["Red", "Green"] }));
        assert_eq!(p["ratio"]["type"], "number");
        let required: Vec<&str> = form["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(!required.contains(&"note") && required.contains(&"size"));
    }

    #[test]
    fn nested_objects_are_refused_with_the_property_named() {
        let error = Nested::requested_schema().unwrap_err();
        assert!(error.contains("`name`"), "{error}");
        assert!(<Vec<String>>::requested_schema().is_err());
    }
}
