//! Reads the library code of a source file: what the crate's structure tests check.

use std::ops::Range;

/// The attribute of items that only tests compile.
const TEST: &[u8] = b"#[cfg(test)]";

/// The code of a source file, line for line, with its comments, the insides of its string and
/// character literals, and its items under `#[cfg(test)]` (tests may use any layer) blanked.
pub(super) fn library_code(text: &str) -> String {
    let mut code = text.as_bytes().to_vec();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let (inside, end) = if rest.starts_with("//") {
            let end = at + rest.find('\n').unwrap_or(rest.len());
            (at..end, end)
        } else if rest.starts_with("/*") {
            let end = at + block_len(rest.as_bytes(), b"/*", b"*/");
            (at..end, end)
        } else if let Some(literal) = literal(text, at) {
            literal
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        blank(&mut code[inside]);
        at = end;
    }
    while let Some(at) = code.windows(TEST.len()).position(|w| w == TEST) {
        let end = at + test_item_len(&code[at..]);
        blank(&mut code[at..end]);
    }
    String::from_utf8(code).expect("blanking whole characters keeps the text UTF-8")
}

fn blank(bytes: &mut [u8]) {
    for byte in bytes.iter_mut().filter(|b| **b != b'\n') {
        *byte = b' ';
    }
}

/// The inside and the end of the string or character literal at `at`, if one starts there
/// (`'a` without a closing quote is a lifetime).
fn literal(text: &str, at: usize) -> Option<(Range<usize>, usize)> {
    let (before, rest) = text.split_at(at);
    let in_word = before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
    if let Some(raw) = rest
        .strip_prefix('r')
        .filter(|_| !in_word || before.ends_with('b'))
    {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        if raw[hashes..].starts_with('"') {
            let inside = at + 2 + hashes;
            let close = format!("\"{}", &raw[..hashes]);
            let close_at = text[inside..]
                .find(&close)
                .map_or(text.len(), |n| inside + n);
            return Some((inside..close_at, (close_at + close.len()).min(text.len())));
        }
    }
    if rest.starts_with('"') {
        let bytes = text.as_bytes();
        let mut end = at + 1;
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(bytes.len());
        return Some((at + 1..end, (end + 1).min(bytes.len())));
    }
    let first = rest.strip_prefix('\'')?.chars().next()?;
    let after = at + 1 + first.len_utf8();
    if first == '\\' {
        let close = text[after + 1..].find('\'')?;
        let end = after + 1 + close;
        return Some((at + 1..end, end + 1));
    }
    text[after..]
        .starts_with('\'')
        .then_some((at + 1..after, after + 1))
}

/// How far the item under the `#[cfg(test)]` that `code` starts with reaches: to its first `;`
/// or `,` outside brackets (a `use`, a field), through its first `{ ... }` block (a module, an
/// impl, a function), or up to the `}` that closes the block around it.
fn test_item_len(code: &[u8]) -> usize {
    let mut depth = 0_usize;
    for (at, byte) in code.iter().enumerate().skip(TEST.len()) {
        match byte {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' | b',' if depth == 0 => return at + 1,
            b'}' if depth == 0 => return at,
            b'{' if depth == 0 => return at + block_len(&code[at..], b"{", b"}"),
            _ => {}
        }
    }
    code.len()
}

/// The length of the (nested) block that `code` starts with, from `open` to its `close`.
fn block_len(code: &[u8], open: &[u8], close: &[u8]) -> usize {
    let mut depth = 0_usize;
    let mut at = 0;
    while at < code.len() {
        if code[at..].starts_with(open) {
            depth += 1;
            at += open.len();
        } else if code[at..].starts_with(close) {
            depth -= 1;
            at += close.len();
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    code.len()
}
