//! What a tool's argument type reads of its arguments: what a task keeps of its call.
//!
//! A task's record is replayed from its arguments, so it must keep them; it need not
//! keep fields the handler never reads (a client can send megabytes of them). Each
//! route holds [`decoded`] for its argument type (`handler`), and the tasks extension
//! calls it when a call becomes a task.
//! [`decoded`] decodes the arguments into the tool's type through [`Tracked`], a
//! deserializer that notes every field the type skips (serde asks for such a value as
//! `ignored_any`), and returns the arguments without those fields. [`json_size`] is the
//! size the cap of `TaskLimits::max_arguments` counts.
//!
//! Only fields a type explicitly skips are dropped; wherever a type takes values whole
//! (a `serde_json::Value` or map field, `flatten`, enums, untagged data) everything is
//! kept. And the result is checked: if the arguments without those fields no longer
//! decode, the task keeps them all.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};

use crate::protocol::JsonObject;

/// The arguments that `A`, a tool's argument type, reads: `arguments` without the
/// fields `A` skips. Everything when `A` does not decode from them (the handler then
/// fails at once, as for any call).
pub(crate) fn decoded<A: DeserializeOwned>(arguments: &JsonObject) -> JsonObject {
    let whole = Value::Object(arguments.clone());
    let skipped = RefCell::new(Vec::new());
    let tracked = Tracked { value: &whole, path: None, skipped: &skipped };
    if A::deserialize(tracked).is_err() {
        return arguments.clone();
    }
    let skipped = skipped.into_inner();
    if skipped.is_empty() {
        return arguments.clone();
    }
    let Value::Object(mut kept) = whole else { unreachable!("built as an object above") };
    for path in &skipped {
        remove(&mut kept, &path.segments());
    }
    // A type that reads a field as `IgnoredAny` yet requires it would not decode
    // without it: keep everything rather than store what a replay cannot run.
    if A::deserialize(&Value::Object(kept.clone())).is_err() {
        return arguments.clone();
    }
    kept
}

/// The size of `value` as compact JSON, without writing it anywhere.
pub(crate) fn json_size(value: &JsonObject) -> usize {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail, and a map of JSON values always serializes.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where a value sits in the arguments: a chain of keys and indexes from the top.
#[derive(Debug)]
struct Path {
    parent: Option<Rc<Path>>,
    segment: Segment,
}

#[derive(Clone, Debug, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl Path {
    fn child(parent: Option<&Rc<Path>>, segment: Segment) -> Rc<Path> {
        Rc::new(Path { parent: parent.cloned(), segment })
    }

    fn segments(self: &Rc<Self>) -> Vec<Segment> {
        let mut segments = Vec::new();
        let mut at = Some(self);
        while let Some(path) = at {
            segments.push(path.segment.clone());
            at = path.parent.as_ref();
        }
        segments.reverse();
        segments
    }
}

/// Removes the field at `path`, walking objects by key and arrays by index; a path
/// that ends at an array element is left alone (removing it would shift the others).
fn remove(object: &mut Map<String, Value>, path: &[Segment]) {
    let Some((Segment::Key(last), parents)) = path.split_last() else { return };
    let Some((Segment::Key(first), inner)) = parents.split_first() else {
        object.remove(last);
        return;
    };
    let mut at = object.get_mut(first);
    for segment in inner {
        at = match (segment, at) {
            (Segment::Key(key), Some(Value::Object(map))) => map.get_mut(key),
            (Segment::Index(index), Some(Value::Array(items))) => items.get_mut(*index),
            _ => None,
        };
    }
    if let Some(Value::Object(map)) = at {
        map.remove(last);
    }
}

/// A deserializer over a JSON value that records the paths of values its visitor skips.
/// Objects and arrays are walked with [`TrackedMap`] and [`TrackedSeq`]; everything else
/// is handed to `serde_json`'s own deserializer for values, so types decode exactly as
/// they do for the handler.
struct Tracked<'a, 'de> {
    value: &'de Value,
    path: Option<Rc<Path>>,
    skipped: &'a RefCell<Vec<Rc<Path>>>,
}

impl<'de> Tracked<'_, 'de> {
    fn child(&self, value: &'de Value, segment: Segment) -> Self {
        Tracked { value, path: Some(Path::child(self.path.as_ref(), segment)), skipped: self.skipped }
    }

    fn visit_object<V: Visitor<'de>>(self, map: &'de Map<String, Value>, visitor: V) -> Result<V::Value, DeError> {
        let mut access = TrackedMap { entries: map.iter(), pending: None, parent: self };
        let value = visitor.visit_map(&mut access)?;
        match access.entries.len() {
            0 => Ok(value),
            left => Err(serde::de::Error::invalid_length(map.len() - left, &"fewer fields")),
        }
    }

    fn visit_array<V: Visitor<'de>>(self, items: &'de [Value], visitor: V) -> Result<V::Value, DeError> {
        let mut access = TrackedSeq { items: items.iter().enumerate(), parent: self };
        let value = visitor.visit_seq(&mut access)?;
        match access.items.len() {
            0 => Ok(value),
            left => Err(serde::de::Error::invalid_length(items.len() - left, &"fewer elements")),
        }
    }
}

/// The error of `serde_json`'s deserializer for values, which [`Tracked`] forwards to.
type DeError = serde_json::Error;

/// Forwards the named methods to `serde_json`'s deserializer for `&Value`.
macro_rules! forward {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?;)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? visitor: V) -> Result<V::Value, DeError> {
            self.value.$method($($($arg,)*)? visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for Tracked<'_, 'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Object(map) => self.visit_object(map, visitor),
            Value::Array(items) => self.visit_array(items, visitor),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Object(map) => self.visit_object(map, visitor),
            other => other.deserialize_map(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.value {
            Value::Object(map) => self.visit_object(map, visitor),
            other => other.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Array(items) => self.visit_array(items, visitor),
            other => other.deserialize_seq(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, DeError> {
        // `serde_json::value::RawValue` and friends rely on the name: leave them to serde_json.
        if name.starts_with("$serde_json") {
            return self.value.deserialize_newtype_struct(name, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if let Some(path) = self.path {
            self.skipped.borrow_mut().push(path);
        }
        visitor.visit_unit()
    }

    forward! {
        deserialize_bool; deserialize_i8; deserialize_i16; deserialize_i32; deserialize_i64; deserialize_i128;
        deserialize_u8; deserialize_u16; deserialize_u32; deserialize_u64; deserialize_u128;
        deserialize_f32; deserialize_f64; deserialize_char; deserialize_str; deserialize_string;
        deserialize_bytes; deserialize_byte_buf; deserialize_unit; deserialize_identifier;
        deserialize_unit_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }
}

struct TrackedMap<'a, 'de> {
    entries: serde_json::map::Iter<'de>,
    pending: Option<(&'de String, &'de Value)>,
    parent: Tracked<'a, 'de>,
}

impl<'de> MapAccess<'de> for &mut TrackedMap<'_, 'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else { return Ok(None) };
        self.pending = Some((key, value));
        seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some((key, value)) = self.pending.take() else {
            return Err(serde::de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(self.parent.child(value, Segment::Key(key.clone())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct TrackedSeq<'a, 'de> {
    items: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    parent: Tracked<'a, 'de>,
}

impl<'de> SeqAccess<'de> for &mut TrackedSeq<'_, 'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DeError> {
        let Some((index, value)) = self.items.next() else { return Ok(None) };
        seed.deserialize(self.parent.child(value, Segment::Index(index))).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        let Value::Object(object) = value else { panic!("not an object") };
        object
    }

    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct Job {
        label: Option<String>,
        seconds: f64,
        steps: Vec<Step>,
        #[serde(alias = "prio")]
        priority: Option<u8>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct Step {
        name: String,
    }

    #[test]
    fn fields_the_type_skips_are_dropped_at_any_depth() {
        let junk = "x".repeat(10_000);
        let sent = object(json!({
            "label": "nightly", "seconds": 2.5, "prio": 3, "junk": junk,
            "steps": [{ "name": "a", "junk": junk }, { "name": "b" }],
        }));
        let kept = decoded::<Job>(&sent);
        assert_eq!(
            Value::Object(kept.clone()),
            json!({ "label": "nightly", "seconds": 2.5, "prio": 3, "steps": [{ "name": "a" }, { "name": "b" }] }),
            "an alias is read, so it is kept"
        );
        assert!(json_size(&kept) < 100);
        assert_eq!(json_size(&sent), serde_json::to_vec(&sent).unwrap().len());
    }

    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct Flat {
        a: u8,
        #[serde(flatten)]
        rest: HashMap<String, Value>,
    }

    #[derive(Deserialize)]
    #[allow(dead_code, reason = "only decoded")]
    struct NeedsIt {
        marker: serde::de::IgnoredAny,
    }

    #[test]
    fn types_that_take_values_whole_keep_everything() {
        let sent = object(json!({ "a": 1, "b": { "c": [1, 2] } }));
        assert_eq!(decoded::<JsonObject>(&sent), sent);
        assert_eq!(decoded::<HashMap<String, Value>>(&sent), sent);
        assert_eq!(decoded::<Flat>(&sent), sent);
    }

    #[test]
    fn arguments_that_do_not_decode_or_need_a_skipped_field_are_kept_whole() {
        let sent = object(json!({ "seconds": "soon", "junk": 1 }));
        assert_eq!(decoded::<Job>(&sent), sent, "the handler fails on them anyway");
        let sent = object(json!({ "marker": [1, 2, 3] }));
        assert_eq!(decoded::<NeedsIt>(&sent), sent);
    }
}
