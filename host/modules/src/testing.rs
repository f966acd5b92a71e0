//! Helpers for tests of hot swap: distinct builds of the same module.

/// `component` with a custom section appended: still a valid component that
/// behaves exactly the same, with a different sha256. Tests use it to get
/// several "versions" of one guest without building it several times.
///
/// A custom section is id 0, the LEB128 size of its content, then the content:
/// the LEB128 length of `name`, `name`, and `payload`. Custom sections may
/// appear anywhere in a module or component and carry no semantics.
pub fn with_custom_section(component: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
    let mut content = leb128(name.len());
    content.extend_from_slice(name.as_bytes());
    content.extend_from_slice(payload);
    let mut out = component.to_vec();
    out.push(0);
    out.extend(leb128(content.len()));
    out.extend(content);
    out
}

fn leb128(mut value: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_encodes_seven_bits_per_byte() {
        assert_eq!(leb128(0), [0]);
        assert_eq!(leb128(127), [127]);
        assert_eq!(leb128(128), [0x80, 1]);
        assert_eq!(leb128(300), [0xac, 0x02]);
    }

    #[test]
    fn appends_id_size_name_and_payload() {
        let module = wat::parse_str("(component)").unwrap();
        let tagged = with_custom_section(&module, "rekon-build", b"v2");
        assert_eq!(&tagged[..module.len()], &module[..]);
        assert_eq!(&tagged[module.len()..], b"\x00\x0e\x0brekon-buildv2");
    }
}
