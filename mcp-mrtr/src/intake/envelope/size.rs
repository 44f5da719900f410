//! How big a body becomes once parsed. A JSON value in memory takes 72 bytes
//! (`serde_json::Value`, with the ordered maps schemas need) however few bytes it took on
//! the wire: `[0,0,0,…]` is 2 bytes a value, so a 1 MiB body of it parses to ~40 MiB (the
//! fifth audit's D3). So a body is counted before it is parsed, and one with more values
//! than the transport takes is refused whole, with an error that says what to change.

use crate::base::error::Error;

/// How many JSON values a request may hold by default: about 7 MiB parsed, whatever the
/// body's size; text (a file's contents in one string) is one value however long.
pub const MAX_JSON_VALUES: usize = 100_000;

/// The values in `bytes`, read as JSON: one per `,`, `[` and `{` outside strings, and one
/// more, less one per empty `[]` or `{}`, so exactly what a parser makes of valid JSON (a
/// `[` or `{` counts its first element, which an empty one does not have; the sixth
/// audit's N8, where 50,001 `[]` were refused as 100,002). Never fewer: a subtraction
/// needs the opener it undoes just before it, whitespace aside. One pass, nothing
/// allocated; a string's contents are skipped at memchr's speed (a `requestState` is most
/// of a retry's bytes); bytes that are not JSON count as whatever they look like, and the
/// parser refuses them after.
pub(crate) fn values_in(bytes: &[u8]) -> usize {
    let mut values = 1;
    // The last byte outside strings that is not whitespace (`"` for a string).
    let mut last = 0u8;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        match byte {
            b'"' => at = past_string(bytes, at),
            b',' | b'[' | b'{' => values += 1,
            b']' if last == b'[' => values -= 1,
            b'}' if last == b'{' => values -= 1,
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            _ => {}
        }
        last = byte;
    }
    values
}

/// Where the string whose contents start at `from` ends: just past its closing quote (an
/// escaped one does not close it), or the end of `bytes`.
fn past_string(bytes: &[u8], mut from: usize) -> usize {
    while let Some(found) = bytes.get(from..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        let at = from + found;
        if bytes[at] == b'"' {
            return at + 1;
        }
        // A backslash: the byte after it is escaped, whatever it is.
        from = at + 2;
    }
    bytes.len()
}

/// `Err` (an invalid request naming both numbers) when `bytes` hold more than `max` values.
pub(crate) fn check(bytes: &[u8], max: usize) -> Result<(), Error> {
    // Each byte adds one value at most, so a body shorter than the bound is within it
    // unread: most requests are a few hundred bytes, and are not read twice.
    if bytes.len() < max {
        return Ok(());
    }
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

    /// Exactly the values serde_json makes of the same bytes (an object's duplicate key
    /// aside, which the parser reads and then drops): never fewer.
    #[test]
    fn counts_what_the_parser_makes() {
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
            "[[], {}, [ ], { \n }, [[]], {\"a\": {}}, \"[]\", \"{}\"]",
            "[]",
            "{}",
            "7",
        ] {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(values_in(json.as_bytes()), parsed(&value), "{json}");
        }
    }

    /// The sixth audit's N8: an empty `[]` or `{}` counted twice, so 50,001 of them were
    /// refused under the bound of 100,000. Exactly at the bound, a body of empty arrays is
    /// taken; one value more is refused.
    #[test]
    fn empty_containers_count_once_up_to_the_exact_bound() {
        let of_empty = |inner: usize| format!("[{}[]]", "[],".repeat(inner - 1));
        let at_bound = of_empty(MAX_JSON_VALUES - 1);
        assert_eq!(values_in(at_bound.as_bytes()), MAX_JSON_VALUES, "the outer array and its empty ones");
        assert!(check(at_bound.as_bytes(), MAX_JSON_VALUES).is_ok());
        let past = of_empty(MAX_JSON_VALUES);
        let refused = check(past.as_bytes(), MAX_JSON_VALUES).unwrap_err();
        assert!(refused.message().starts_with("the request holds 100001 JSON values"), "{}", refused.message());
        let objects = format!("[{}{{}}]", "{},".repeat(MAX_JSON_VALUES - 2));
        assert!(check(objects.as_bytes(), MAX_JSON_VALUES).is_ok(), "empty objects count once too");
    }

    /// A body shorter than the bound is taken unread: never one the count would refuse.
    /// Commas are the most values a byte can make, one each, on top of the one.
    #[test]
    fn a_body_shorter_than_the_bound_cannot_pass_it() {
        for max in [1, 2, 10, 1_000] {
            let just_within = ",".repeat(max - 1);
            assert_eq!(values_in(just_within.as_bytes()), max);
            assert!(check(just_within.as_bytes(), max).is_ok());
            let past = ",".repeat(max);
            assert!(check(past.as_bytes(), max).is_err(), "{max} commas make {} values", max + 1);
        }
    }

    /// What is not JSON is never counted below the openers and commas it holds: each
    /// closer takes back only the opener right before it.
    #[test]
    fn closers_take_back_only_their_own_opener() {
        assert_eq!(values_in(b"[]]]]"), 1);
        assert_eq!(values_in(b"[}{]"), 3);
        assert_eq!(values_in(b"[,]"), 3);
    }

    /// The count read byte by byte, as it was before strings were skipped with memchr.
    fn byte_by_byte(bytes: &[u8]) -> usize {
        let (mut values, mut in_string, mut escaped, mut last) = (1, false, false, 0u8);
        for &byte in bytes {
            if in_string {
                if escaped {
                    escaped = false;
                } else if byte == b'\\' {
                    escaped = true;
                } else if byte == b'"' {
                    in_string = false;
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b',' | b'[' | b'{' => values += 1,
                b']' if last == b'[' => values -= 1,
                b'}' if last == b'{' => values -= 1,
                b' ' => continue,
                _ => {}
            }
            last = byte;
        }
        values
    }

    /// Skipping strings whole counts what reading every byte counts, on any bytes.
    #[test]
    fn skipping_strings_counts_as_reading_every_byte() {
        let alphabet = br#""\[]{}, a"#;
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = usize::try_from(seed % 24).unwrap();
            let bytes: Vec<u8> = (0..len).map(|n| alphabet[usize::try_from((seed >> (n % 60)) % 9).unwrap()]).collect();
            assert_eq!(values_in(&bytes), byte_by_byte(&bytes), "{:?}", String::from_utf8_lossy(&bytes));
            assert!(values_in(&bytes) <= bytes.len() + 1, "check() takes shorter bodies unread");
        }
    }

    /// A string's escapes, its end, and one left open, as the byte-by-byte reading had them.
    #[test]
    fn strings_are_skipped_whole_escapes_and_all() {
        assert_eq!(values_in(br#"["a\\",1]"#), 3, "an escaped backslash, then the quote that ends it");
        assert_eq!(values_in(br#"["a\",1]"#), 2, "an escaped quote does not end the string");
        assert_eq!(values_in(br#"["a\"#), 2, "a backslash at the very end");
        assert_eq!(values_in(br#"["unclosed, [ {"#), 2);
        assert_eq!(values_in(br#""\\\\",[]"#), 2);
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
