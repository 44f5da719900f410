//! A `SKILL.md`'s frontmatter, read from the bytes that are served: the YAML between the
//! opening and closing `---` lines, parsed as YAML 1.2 and turned into JSON verbatim
//! (every field the author wrote), and the Agent Skills rules the extension relies on.

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

use crate::protocol::JsonObject;

/// The longest name and description the Agent Skills format allows.
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1024;

/// A `SKILL.md`'s frontmatter, checked: its `name` and `description`, and the whole
/// object as the wire carries it.
#[derive(Debug)]
pub(super) struct Frontmatter {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) object: JsonObject,
}

/// Reads the frontmatter of `bytes` (a UTF-8 `SKILL.md`, a BOM and CRLF line ends
/// tolerated) and checks the name against `expected` (the skill directory's name).
pub(super) fn read(bytes: &[u8], expected: &str) -> Result<Frontmatter, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SKILL.md is not UTF-8".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("SKILL.md must begin with a `---` line opening its frontmatter".into());
    }
    let mut yaml = String::new();
    let closed = lines.any(|line| {
        let end = line.trim_end() == "---";
        if !end {
            yaml.push_str(line);
        }
        end
    });
    if !closed {
        return Err("the frontmatter of SKILL.md has no closing `---` line".into());
    }
    let docs = YamlLoader::load_from_str(&yaml).map_err(|e| format!("the frontmatter is not YAML: {e}"))?;
    let Some(Value::Object(object)) = docs.first().map(to_json).transpose()? else {
        return Err("the frontmatter must be a YAML mapping".into());
    };
    let name = text_field(&object, "name")?;
    check_name(&name)?;
    if name != expected {
        return Err(format!("the frontmatter names the skill {name:?}, but its directory is {expected:?}"));
    }
    let description = text_field(&object, "description")?;
    if description.is_empty() || description.chars().count() > MAX_DESCRIPTION {
        return Err(format!("the description must be 1 to {MAX_DESCRIPTION} characters"));
    }
    Ok(Frontmatter { name, description, object })
}

fn text_field(object: &JsonObject, key: &str) -> Result<String, String> {
    match object.get(key) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("the frontmatter's `{key}` must be a string")),
        None => Err(format!("the frontmatter has no `{key}`")),
    }
}

/// The Agent Skills name rule, in the form every implementation accepts: 1 to 64 of
/// `a-z`, `0-9` and `-`, no `-` first or last, no `--`.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let valid = (1..=MAX_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(format!("{name:?} is not a skill name: 1 to {MAX_NAME} of a-z, 0-9 and single inner hyphens"))
    }
}

/// A YAML value as JSON, or why it has no JSON form (a non-string key, an alias, a
/// number JSON cannot carry).
fn to_json(yaml: &Yaml) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::Real(text) => {
            let number = yaml.as_f64().and_then(Number::from_f64);
            Value::Number(number.ok_or_else(|| format!("{text} has no JSON form"))?)
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(hash) => {
            let mut object = Map::new();
            for (key, value) in hash {
                let Yaml::String(key) = key else {
                    return Err("frontmatter keys must be strings".into());
                };
                object.insert(key.clone(), to_json(value)?);
            }
            Value::Object(object)
        }
        _ => return Err("the frontmatter uses an alias or a value YAML could not read".into()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_field_verbatim() {
        let md = "\u{feff}---\r\nname: git-workflow\r\ndescription: Team conventions.\r\nversion: 1.5\r\nmetadata:\r\n  owner: ops\r\n---\r\n# Body\r\n";
        let read = read(md.as_bytes(), "git-workflow").unwrap();
        assert_eq!(read.name, "git-workflow");
        assert_eq!(
            Value::Object(read.object),
            json!({ "name": "git-workflow", "description": "Team conventions.", "version": 1.5, "metadata": { "owner": "ops" } })
        );
    }

    #[test]
    fn refuses_what_hosts_would_refuse() {
        let md = |front: &str| format!("---\n{front}\n---\nbody\n");
        assert!(read(md("name: a\ndescription: d").as_bytes(), "b").unwrap_err().contains("directory"));
        assert!(read(md("name: a").as_bytes(), "a").unwrap_err().contains("description"));
        assert!(read(md("name: A\ndescription: d").as_bytes(), "A").is_err());
        assert!(read(md("name: a\ndescription: d\n1: x").as_bytes(), "a").unwrap_err().contains("keys"));
        assert!(read(b"name: a\n", "a").unwrap_err().contains("begin"));
        assert!(read(b"---\nname: a\ndescription: d\n", "a").unwrap_err().contains("closing"));
        for bad in ["", "-a", "a-", "a--b", "Ab", "a_b", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("refunds-2").unwrap();
    }
}
