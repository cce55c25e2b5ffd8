//! Structure-aware inputs without coverage feedback: a target's seeds (valid documents) are
//! mutated by a stack of edits chosen through `arbitrary::Unstructured` over random bytes. The
//! edits are the ones that break readers: truncations, byte and bit flips, the target's own
//! tokens spliced in, huge and odd numbers, deep nesting, invalid UTF-8, long lines, repeated
//! and deleted ranges, crossovers between seeds, and generated JSON values.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value};

/// The largest input a case gets: readers must hold memory in proportion to their input, so a
/// cap on the input is what makes a peak RSS bound meaningful.
pub const MAX_INPUT: usize = 1 << 20;

/// splitmix64: a fast, seedable source of the bytes `Unstructured` reads.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// Numbers that overflow, underflow or lose precision in one reader or another.
const NUMBERS: &[&str] = &[
    "18446744073709551616",
    "-9223372036854775809",
    "9007199254740993",
    "1e999999",
    "-1e-999999",
    "-0",
    "0.1e-",
    "1.7976931348623157e309",
    "0x7fffffff",
    "NaN",
    "-Infinity",
    "340282366920938463463374607431768211457",
];

/// Byte sequences that are not UTF-8 (a lone continuation, a truncated sequence, a surrogate,
/// a code point above U+10FFFF, an overlong NUL) and escapes that decode to lone surrogates.
const NOT_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\x80",
    b"\\ud800",
    b"\\udc00\\ud800",
    b"\xef\xbb\xbf",
];

/// Bytes that end, open or escape something in most syntaxes.
const SPECIAL: &[u8] = b"\n\r\0\"'{}[]:,\\ -#&*!|>%@`\t";

/// Mutates `data` in place with 1 to 6 stacked edits, using `seeds` for crossovers and `dict`
/// for the target's tokens. Stops early (keeping what it has) when the random bytes run out.
pub fn mutate(u: &mut Unstructured<'_>, data: &mut Vec<u8>, seeds: &[Vec<u8>], dict: &[&[u8]]) {
    let edits = u.int_in_range(1..=6u8).unwrap_or(1);
    for _ in 0..edits {
        if edit(u, data, seeds, dict).is_err() {
            break;
        }
    }
    data.truncate(MAX_INPUT);
}

fn position(u: &mut Unstructured<'_>, data: &[u8]) -> Result<usize> {
    u.int_in_range(0..=data.len())
}

/// A position at a line start half the time: many readers decide things per line.
fn line_position(u: &mut Unstructured<'_>, data: &[u8]) -> Result<usize> {
    let at = position(u, data)?;
    if u.arbitrary::<bool>()? {
        return Ok(data[..at]
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |newline| newline + 1));
    }
    Ok(at)
}

fn insert(data: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    let room = MAX_INPUT.saturating_sub(data.len());
    let bytes = &bytes[..bytes.len().min(room)];
    data.splice(at..at, bytes.iter().copied());
}

fn edit(
    u: &mut Unstructured<'_>,
    data: &mut Vec<u8>,
    seeds: &[Vec<u8>],
    dict: &[&[u8]],
) -> Result<()> {
    // Weighted: the cheap local edits often, the ones that make inputs large (nesting, long
    // lines, repeats) rarely, so the typical case stays near its seed's size.
    match u.int_in_range(0..=31u8)? {
        0 | 1 => {
            let at = position(u, data)?;
            data.truncate(at);
        }
        2..=5 if !data.is_empty() => {
            for _ in 0..u.int_in_range(1..=4u8)? {
                let at = u.choose_index(data.len())?;
                data[at] ^= 1 << u.int_in_range(0..=7u8)?;
            }
        }
        6..=8 if !data.is_empty() => {
            let at = u.choose_index(data.len())?;
            data[at] = match u.arbitrary::<bool>()? {
                true => *u.choose(SPECIAL)?,
                false => u.arbitrary()?,
            };
        }
        9..=14 if !dict.is_empty() => {
            let at = line_position(u, data)?;
            let token = *u.choose(dict)?;
            insert(data, at, token);
        }
        op @ 15..=20 => insert_hostile(u, data, op)?,
        21 | 22 if !data.is_empty() => {
            let start = u.choose_index(data.len())?;
            let end = u.int_in_range(start..=data.len().min(start + 4096))?;
            let copy = data[start..end].repeat(u.int_in_range(1..=8usize)?);
            let at = position(u, data)?;
            insert(data, at, &copy);
        }
        23 | 24 if !data.is_empty() => {
            let start = u.choose_index(data.len())?;
            let end = u.int_in_range(start..=data.len())?;
            data.drain(start..end);
        }
        25 | 26 if !seeds.is_empty() => {
            let other = u.choose(seeds)?;
            if !other.is_empty() {
                let start = u.choose_index(other.len())?;
                let end = u.int_in_range(start..=other.len())?;
                let at = line_position(u, data)?;
                insert(data, at, &other[start..end]);
            }
        }
        27 | 28 => {
            let at = line_position(u, data)?;
            let value = json_value(u, dict, 0)?;
            let text = serde_json::to_string(&value).unwrap_or_default();
            insert(data, at, text.as_bytes());
        }
        29 | 30 => {
            let at = position(u, data)?;
            let bytes = *u.choose(&[&b"\r"[..], b"\r\n", b"\n", b"\n\n", b"\0", b"\t", b"\x0b"])?;
            insert(data, at, bytes);
        }
        _ => {
            // A line replaced by a generated one: keeps the lines around it valid.
            let at = line_position(u, data)?;
            let end = data[at..]
                .iter()
                .position(|byte| *byte == b'\n')
                .map_or(data.len(), |offset| at + offset);
            let value = json_value(u, dict, 0)?;
            let text = serde_json::to_string(&value).unwrap_or_default();
            data.splice(at..end, text.into_bytes());
        }
    }
    Ok(())
}

/// The inserts that make a reader work hardest: huge numbers, deep nesting, invalid UTF-8
/// and long runs of one byte.
fn insert_hostile(u: &mut Unstructured<'_>, data: &mut Vec<u8>, op: u8) -> Result<()> {
    match op {
        15 | 16 => {
            let at = position(u, data)?;
            let number = match u.arbitrary::<bool>()? {
                true => (*u.choose(NUMBERS)?).to_owned(),
                false => format!("1{}", "0".repeat(u.int_in_range(20..=400usize)?)),
            };
            insert(data, at, number.as_bytes());
        }
        17 => {
            let at = position(u, data)?;
            let depth = match u.ratio(1, 8)? {
                true => u.int_in_range(200..=3000usize)?,
                false => u.int_in_range(1..=200usize)?,
            };
            let (open, close): (&[u8], &[u8]) = *u.choose(&[
                (&b"["[..], &b"]"[..]),
                (b"{\"a\":", b"}"),
                (b"{", b"}"),
                (b"- ", b""),
                (b"[{\"x\":[", b"]}]"),
            ])?;
            let mut nested = open.repeat(depth);
            if u.arbitrary::<bool>()? {
                nested.extend(close.repeat(depth));
            }
            insert(data, at, &nested);
        }
        18 | 19 => {
            let at = position(u, data)?;
            let bytes = *u.choose(NOT_UTF8)?;
            insert(data, at, bytes);
        }
        _ => {
            let at = position(u, data)?;
            let byte = match u.arbitrary::<bool>()? {
                true => *u.choose(b"a \"\\[{:0\xff\r")?,
                false => u.arbitrary()?,
            };
            let length = match u.ratio(1, 8)? {
                true => u.int_in_range(4096..=300_000usize)?,
                false => u.int_in_range(100..=4096usize)?,
            };
            let run = vec![byte; length];
            insert(data, at, &run);
        }
    }
    Ok(())
}

/// A key: one of the target's tokens that reads as a word, or a short arbitrary string.
fn key(u: &mut Unstructured<'_>, dict: &[&[u8]]) -> Result<String> {
    let words: Vec<&str> = dict
        .iter()
        .filter_map(|token| std::str::from_utf8(token).ok())
        .map(|token| token.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '_'))
        .filter(|token| !token.is_empty())
        .collect();
    match words.is_empty() || u.ratio(1, 4)? {
        true => u.arbitrary(),
        false => Ok((*u.choose(&words)?).to_owned()),
    }
}

/// A JSON value whose keys are mostly the target's own words, nested at most 6 deep.
fn json_value(u: &mut Unstructured<'_>, dict: &[&[u8]], depth: u8) -> Result<Value> {
    let leaf = depth >= 6;
    Ok(match u.int_in_range(0..=if leaf { 4 } else { 6u8 })? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        4 => Value::String(match u.arbitrary::<bool>()? {
            true => key(u, dict)?,
            false => u.arbitrary()?,
        }),
        5 => Value::Array(
            (0..u.int_in_range(0..=4u8)?)
                .map(|_| json_value(u, dict, depth + 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..u.int_in_range(0..=5u8)? {
                map.insert(key(u, dict)?, json_value(u, dict, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

/// Split points for readers fed in chunks, drawn from the input itself so a replay splits the
/// same way: single bytes, small reads and large ones.
pub fn chunks(input: &[u8]) -> Vec<&[u8]> {
    let mut rng = Rng::new(fnv(input));
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let size = match rng.next_u64() % 4 {
            0 => 1,
            1 => 1 + (rng.next_u64() % 16) as usize,
            2 => 1 + (rng.next_u64() % 512) as usize,
            _ => 1 + (rng.next_u64() % 65_536) as usize,
        };
        let (head, tail) = rest.split_at(size.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

/// FNV-1a: a stable name for an input (crasher file names, split seeds).
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
