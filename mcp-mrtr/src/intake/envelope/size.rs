//! How big a body becomes once parsed. A JSON value in memory takes 72 bytes
//! (`serde_json::Value`, with the ordered maps schemas need) however few bytes it took on
//! the wire: `[0,0,0,…]` is 2 bytes a value, so a 1 MiB body of it parses to ~40 MiB (the
//! fifth audit's D3). So a body is counted before it is parsed, and one with more values
//! than the transport takes is refused whole, with an error that says what to change.

use crate::Error;

/// How many JSON values a request may hold by default: about 7 MiB parsed, whatever the
/// body's size; text (a file's contents in one string) is one value however long.
pub const MAX_JSON_VALUES: usize = 100_000;

/// The values in `bytes`, read as JSON: one per `,`, `[` and `{` outside strings, and one
/// more, so never fewer than a parser makes (an empty `[]` or `{}` counts one extra).
/// One pass, nothing allocated; bytes that are not JSON count as whatever they look like,
/// and the parser refuses them after.
pub(crate) fn values_in(bytes: &[u8]) -> usize {
    let (mut values, mut in_string, mut escaped) = (1, false, false);
    for &byte in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b',' | b'[' | b'{' => values += 1,
                _ => {}
            }
        }
    }
    values
}

/// `Err` (an invalid request naming both numbers) when `bytes` hold more than `max` values.
pub(crate) fn check(bytes: &[u8], max: usize) -> Result<(), Error> {
    let values = values_in(bytes);
    if values > max {
        return Err(Error::invalid_request(format!(
            "the request holds {values} JSON values, more than the {max} this server takes in one request"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Never fewer than the values serde_json makes of the same bytes.
    #[test]
    fn counts_at_least_what_the_parser_makes() {
        fn parsed(value: &serde_json::Value) -> usize {
            1 + match value {
                serde_json::Value::Array(items) => items.iter().map(parsed).sum(),
                serde_json::Value::Object(members) => members.values().map(parsed).sum(),
                _ => 0,
            }
        }
        for json in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,3]}}}"#,
            r"[0,0,0,0]",
            r#""a string, with [brackets] {and} \"quotes\", counted once""#,
            r#"{"k\\":"v\\","e":[],"o":{}}"#,
            "7",
        ] {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            let (counted, made) = (values_in(json.as_bytes()), parsed(&value));
            assert!(counted >= made && counted <= made + 2, "{json}: counted {counted}, parsed {made}");
        }
    }

    #[test]
    fn a_body_past_the_bound_is_refused_naming_both_numbers() {
        let zeros = format!("[{}0]", "0,".repeat(20));
        assert!(check(zeros.as_bytes(), 22).is_ok());
        let refused = check(zeros.as_bytes(), 21).unwrap_err();
        assert_eq!(
            refused.message(),
            "the request holds 22 JSON values, more than the 21 this server takes in one request"
        );
    }
}
