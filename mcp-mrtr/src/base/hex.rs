//! Lower-case hex, written directly: digests in hex are made on every round, and
//! `format!("{:x}")` writes them a digit at a time through the formatting machinery.

/// `bytes` as lower-case hex, two digits a byte.
pub(crate) fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_what_format_writes() {
        let bytes: Vec<u8> = (0..=255).collect();
        let formatted: Vec<String> = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(super::encode(&bytes), formatted.concat());
        assert_eq!(super::encode(&[]), "");
    }
}
