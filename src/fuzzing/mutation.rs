//! A seeded mutation loop: the stable, in-process counterpart of the coverage-guided targets
//! in `fuzz/`. It runs a parser entry of [`super`] over mutants of real files (bit flips,
//! interesting bytes, truncations, insertions, deletions, duplicated ranges and splices from
//! other seed files), so `cargo test --lib` checks a few thousand hostile inputs per parser in
//! a few seconds on every run, with no nightly toolchain. A run is reproducible from its seed:
//! a failure names the seed and the case, and writes the input to a file.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// A small, fast pseudo-random generator (SplitMix64): reproducible, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }
}

/// Bytes that often sit on a parser's edge: zero, one, sign bits, all ones, and the bytes of
/// JSON's structure.
const INTERESTING: &[u8] = &[
    0x00, 0x01, 0x02, 0x7f, 0x80, 0x81, 0xfe, 0xff, b'-', b'0', b'9', b'"', b'{', b'}', b'[', b']',
    b',', b':', b'e', b'.',
];

/// A mutant of `seed`: one to four edits, with `donors` (the other seed files) as the source
/// of spliced bytes.
pub fn mutate(seed: &[u8], donors: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..=rng.below(4) {
        edit(&mut out, donors, rng);
    }
    out
}

/// One random edit of `bytes`.
fn edit(bytes: &mut Vec<u8>, donors: &[Vec<u8>], rng: &mut Rng) {
    let len = bytes.len();
    let at = rng.below(len + 1);
    match rng.below(8) {
        0 if len > 0 => bytes[at.min(len - 1)] ^= 1 << rng.below(8),
        1 if len > 0 => bytes[at.min(len - 1)] = INTERESTING[rng.below(INTERESTING.len())],
        2 => bytes.truncate(at),
        3 => {
            let n = 1 + rng.below(8);
            let inserted: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            bytes.splice(at..at, inserted);
        }
        4 => {
            let end = (at + 1 + rng.below(64)).min(len);
            bytes.drain(at.min(end)..end);
        }
        5 => {
            let end = (at + 1 + rng.below(64)).min(len);
            let copy = bytes[at.min(end)..end].to_vec();
            let to = rng.below(bytes.len() + 1);
            bytes.splice(to..to, copy);
        }
        6 if !donors.is_empty() => {
            let donor = &donors[rng.below(donors.len())];
            let from = rng.below(donor.len() + 1);
            let end = (from + 1 + rng.below(256)).min(donor.len());
            bytes.splice(at..at, donor[from..end].iter().copied());
        }
        _ => {
            // A multi-byte integer field set to an edge value: 0, -1 or a huge length.
            let value: [u8; 4] = match rng.below(3) {
                0 => [0; 4],
                1 => [0xff; 4],
                _ => [0x7f, 0xff, 0xff, 0xff],
            };
            let end = (at + 4).min(len);
            if at < end {
                bytes[at..end].copy_from_slice(&value[..end - at]);
            }
        }
    }
}

/// What a [`run`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Inputs the parser was run on.
    pub cases: usize,
    /// Inputs it parsed (the rest were refused with a typed error).
    pub parsed: usize,
    /// The longest time one input took.
    pub slowest: Duration,
}

/// Makes a mutant of a seed file, given the other seed files and the generator.
pub type Mutator = fn(&[u8], &[Vec<u8>], &mut Rng) -> Vec<u8>;

/// Runs `target` on every seed, then on `cases` mutants of them made by `mutator` from the
/// generator seeded with `seed`. A panic is
/// re-raised naming the case and the seed, after the input is written to
/// `<temp dir>/icefloe-fuzz-<name>-<seed>-<case>.bin` (a target under `fuzz/` replays it).
#[allow(clippy::panic)]
pub fn run(
    name: &str,
    seeds: &[Vec<u8>],
    (cases, seed): (usize, u64),
    mutator: Mutator,
    target: fn(&[u8]) -> bool,
) -> Report {
    let mut rng = Rng::new(seed);
    let mut slowest = Duration::ZERO;
    let mut parsed = 0;
    let total = seeds.len() + if seeds.is_empty() { 0 } else { cases };
    for case in 0..total {
        let input = match seeds.get(case) {
            Some(seed) => seed.clone(),
            None => mutator(&seeds[rng.below(seeds.len())], seeds, &mut rng),
        };
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| target(&input)));
        if let Ok(ok) = outcome {
            parsed += usize::from(ok);
        }
        if let Err(panic) = outcome {
            let file = std::env::temp_dir().join(format!("icefloe-fuzz-{name}-{seed}-{case}.bin"));
            let written = std::fs::write(&file, &input).is_ok();
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_default();
            panic!(
                "{name}: case {case} of seed {seed} panicked ({message}); input in {} ({})",
                file.display(),
                if written { "written" } else { "not written" }
            );
        }
        slowest = slowest.max(started.elapsed());
    }
    Report {
        cases: total,
        parsed,
        slowest,
    }
}

/// A mutant of a JSON document (metadata files): half of the time a byte-level [`mutate`],
/// else one to four structural edits of random values (removed, nulled, set to an edge
/// number, replaced by another value of the document, or an array element repeated), so that
/// inputs stay JSON and reach the checks behind the parser. Bytes that are not JSON always
/// get a byte-level mutant.
pub fn mutate_json(seed: &[u8], donors: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(seed) else {
        return mutate(seed, donors, rng);
    };
    if rng.below(2) == 0 {
        return mutate(seed, donors, rng);
    }
    for _ in 0..=rng.below(4) {
        let donor = pick(&mut doc.clone(), rng).clone();
        json_edit(pick(&mut doc, rng), donor, rng);
    }
    doc.to_string().into_bytes()
}

/// A random value inside `doc` (the document itself, or a value nested in it).
fn pick<'a>(doc: &'a mut serde_json::Value, rng: &mut Rng) -> &'a mut serde_json::Value {
    let depth = rng.below(8);
    descend(doc, rng, depth)
}

fn descend<'a>(
    doc: &'a mut serde_json::Value,
    rng: &mut Rng,
    depth: usize,
) -> &'a mut serde_json::Value {
    use serde_json::Value;
    let len = match &*doc {
        Value::Object(o) => o.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    };
    if depth == 0 || len == 0 {
        return doc;
    }
    let i = rng.below(len);
    match doc {
        Value::Object(o) => match o.values_mut().nth(i) {
            Some(v) => descend(v, rng, depth - 1),
            None => unreachable!("{i} < {len}"),
        },
        Value::Array(a) => descend(&mut a[i], rng, depth - 1),
        other => other,
    }
}

/// One structural edit of `value`; `donor` is another value of the same document.
fn json_edit(value: &mut serde_json::Value, donor: serde_json::Value, rng: &mut Rng) {
    use serde_json::{Value, json};
    const NUMBERS: [i64; 7] = [0, -1, 1, 2, 1000, i64::MAX, i64::MIN];
    match (rng.below(6), &mut *value) {
        (0, Value::Object(o)) if !o.is_empty() => {
            let key = o
                .keys()
                .nth(rng.below(o.len()))
                .cloned()
                .unwrap_or_default();
            o.remove(&key);
        }
        (1, Value::Array(a)) if !a.is_empty() => {
            let item = a[rng.below(a.len())].clone();
            a.push(item);
        }
        (2, _) => *value = Value::Null,
        (3, _) => *value = json!(NUMBERS[rng.below(NUMBERS.len())]),
        (4, _) => *value = donor,
        _ => *value = [json!("1.5"), json!(1.5), json!("x")][rng.below(3)].clone(),
    }
}

/// A mutant of an Avro container (manifests and lists): half of the time a byte-level
/// [`mutate`] of the file, else a mutant of the records themselves: one block is inflated, its
/// bytes (or its record count) mutated, and the block deflated again, so that the record
/// decoder is reached and not only the codec. Files that do not split get a byte-level mutant.
pub fn mutate_avro(seed: &[u8], donors: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    match split_avro(seed) {
        Some(file) if rng.below(2) == 0 && !file.blocks.is_empty() => {
            mutate_block(&file, donors, rng).unwrap_or_else(|| mutate(seed, donors, rng))
        }
        _ => mutate(seed, donors, rng),
    }
}

/// An Avro object container file: header (magic, metadata, sync marker) and blocks.
struct AvroParts<'a> {
    header: &'a [u8],
    deflate: bool,
    sync: &'a [u8],
    /// Each block's record count and (still compressed) bytes.
    blocks: Vec<(i64, &'a [u8])>,
}

fn split_avro(bytes: &[u8]) -> Option<AvroParts<'_>> {
    let mut input = bytes.strip_prefix(b"Obj\x01")?;
    let mut deflate = false;
    loop {
        let count = zigzag_read(&mut input)?;
        if count == 0 {
            break;
        }
        if count < 0 {
            zigzag_read(&mut input)?;
        }
        for _ in 0..count.unsigned_abs() {
            let key = take_len(&mut input)?;
            let value = take_len(&mut input)?;
            deflate |= key == b"avro.codec" && value == b"deflate";
        }
    }
    let sync = take(&mut input, 16)?;
    let header = &bytes[..bytes.len() - input.len()];
    let mut blocks = Vec::new();
    while !input.is_empty() {
        let count = zigzag_read(&mut input)?;
        let data = take_len(&mut input)?;
        take(&mut input, 16)?;
        blocks.push((count, data));
    }
    Some(AvroParts {
        header,
        deflate,
        sync,
        blocks,
    })
}

/// `file` with one block's records mutated (see [`mutate_avro`]).
fn mutate_block(file: &AvroParts<'_>, donors: &[Vec<u8>], rng: &mut Rng) -> Option<Vec<u8>> {
    use std::io::{Read, Write};
    let pick = rng.below(file.blocks.len());
    let mut out = file.header.to_vec();
    for (i, &(count, data)) in file.blocks.iter().enumerate() {
        let (mut count, mut data) = (count, data.to_vec());
        if i == pick {
            let mut plain = data.clone();
            if file.deflate {
                plain.clear();
                flate2::read::DeflateDecoder::new(data.as_slice())
                    .read_to_end(&mut plain)
                    .ok()?;
            }
            match rng.below(8) {
                0 => {
                    count = [
                        0,
                        count.saturating_sub(1),
                        count.saturating_add(1),
                        i64::MAX >> 1,
                    ][rng.below(4)]
                }
                _ => plain = mutate(&plain, donors, rng),
            }
            data = plain;
            if file.deflate {
                let mut encoder =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
                encoder.write_all(&data).ok()?;
                data = encoder.finish().ok()?;
            }
        }
        out.extend(zigzag_write(count));
        out.extend(zigzag_write(i64::try_from(data.len()).ok()?));
        out.extend(&data);
        out.extend_from_slice(file.sync);
    }
    Some(out)
}

fn zigzag_read(input: &mut &[u8]) -> Option<i64> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input.split_first()?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    None
}

fn zigzag_write(n: i64) -> Vec<u8> {
    let mut v = ((n << 1) ^ (n >> 63)) as u64;
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Some(head)
}

fn take_len<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(zigzag_read(input)?).ok()?;
    take(input, len)
}
