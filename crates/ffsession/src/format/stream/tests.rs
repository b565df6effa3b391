use super::*;

/// What lz4_flex makes of `block`, as (bytes, error message).
fn reference(block: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0; size];
    match lz4_flex::block::decompress_into(block, &mut out) {
        Ok(n) => {
            out.truncate(n);
            Ok(out)
        }
        Err(e) => Err(e.to_string()),
    }
}

fn streamed(block: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0; size];
    let mut reported = Vec::new();
    let result = decode(block, &mut out, &mut |n| reported.push(n));
    // Progress only moves forward, a chunk at a time, within the block.
    for w in reported.windows(2) {
        assert!(w[1] >= w[0] + CHUNK, "{reported:?}");
    }
    assert!(reported.iter().all(|&n| n >= CHUNK && n <= block.len()));
    match result {
        Ok(n) => {
            // Sequences are short: every chunk passed is reported.
            assert!(reported.len() + 1 >= block.len() / CHUNK, "{reported:?}");
            out.truncate(n);
            Ok(out)
        }
        Err(e) => Err(e.to_string()),
    }
}

fn sample(len: usize) -> Vec<u8> {
    // Text with repeats near and far, runs (overlapping matches) and
    // stretches of noise (long literals).
    let mut v = Vec::new();
    let mut x: u32 = 7;
    while v.len() < len {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        match x >> 29 {
            0 => v.extend(std::iter::repeat_n(b'a', (x >> 8) as usize % 700)),
            1 => v.extend((0..(x >> 9) % 3000).map(|i| (i * 7 + (x >> 3)) as u8)),
            2..=4 => {
                v.extend_from_slice(b"{\"url\":\"https://example.com/page\",\"title\":\"x\"},")
            }
            _ => v.extend_from_slice(format!("{x}-").as_bytes()),
        }
    }
    v.truncate(len);
    v
}

/// `block` cut every `cut_step` bytes, and with a byte flipped (three
/// ways) every `flip_step` bytes, each claiming `size`.
fn damaged(block: &[u8], size: usize, cut_step: usize, flip_step: usize) -> Vec<(Vec<u8>, usize)> {
    let mut cases: Vec<(Vec<u8>, usize)> = Vec::new();
    for cut in (0..block.len()).step_by(cut_step) {
        cases.push((block[..cut].to_vec(), size));
    }
    for at in (0..block.len()).step_by(flip_step) {
        for flip in [0x01, 0x80, 0xff] {
            let mut b = block.to_vec();
            b[at] ^= flip;
            cases.push((b, size));
        }
    }
    cases
}

#[test]
fn decodes_as_lz4_flex_does() {
    for len in [0, 1, 15, 16, 17, 100, 5_000, 700_000, 3_000_000] {
        let json = sample(len);
        let block = lz4_flex::block::compress(&json);
        assert_eq!(streamed(&block, json.len()), Ok(json.clone()), "len {len}");
        assert_eq!(reference(&block, json.len()), Ok(json), "len {len}");
    }
}

#[test]
fn cut_damaged_and_wrongly_sized_blocks_fail_as_lz4_flex_does() {
    let json = sample(60_000);
    let block = lz4_flex::block::compress(&json);
    let mut cases = damaged(&block, json.len(), 97, 131);
    cases.push((block.clone(), json.len() - 1));
    cases.push((block.clone(), 10));
    cases.push((block.clone(), json.len() + 100));
    let mut failures = 0;
    for (b, size) in cases {
        let want = reference(&b, size);
        let got = streamed(&b, size);
        match (&want, &got) {
            (Ok(w), Ok(g)) => assert_eq!(w, g),
            (Err(w), Err(g)) => {
                assert_eq!(w, g, "size {size}");
                failures += 1;
            }
            _ => panic!(
                "lz4_flex {:?}, here {:?}",
                want.map(|v| v.len()),
                got.map(|v| v.len())
            ),
        }
    }
    assert!(failures > 20, "{failures}");
}
/// What [`Pieces`] makes of `block`, `piece` bytes at a time, each piece
/// after a copy of the last `WINDOW` bytes of the output before it.
fn in_pieces(block: &[u8], size: usize, piece: usize) -> Option<Vec<u8>> {
    let mut decoder = Pieces::new(block, size);
    let mut all = Vec::new();
    let mut buf = vec![0; piece];
    let mut start = 0;
    loop {
        let end = decoder.fill(&mut buf, start).ok()?;
        assert!(end == buf.len() || decoder.finished());
        all.extend_from_slice(&buf[start..end]);
        if decoder.finished() {
            return Some(all);
        }
        let window = WINDOW.min(all.len());
        buf = vec![0; window + piece];
        buf[..window].copy_from_slice(&all[all.len() - window..]);
        start = window;
    }
}

#[test]
fn pieces_decode_as_the_whole_block_does() {
    for len in [0, 1, 17, 5_000, 700_000] {
        let json = sample(len);
        let block = lz4_flex::block::compress(&json);
        for piece in [1, 2, 15, 16, 33, 1000, 65_536, 300_000] {
            if len > 5_000 && piece < 1000 {
                continue;
            }
            assert_eq!(
                in_pieces(&block, json.len(), piece).as_ref(),
                Some(&json),
                "len {len}, piece {piece}"
            );
        }
    }
}

#[test]
fn pieces_fail_where_the_whole_block_fails() {
    let json = sample(60_000);
    let block = lz4_flex::block::compress(&json);
    let mut cases = damaged(&block, json.len(), 89, 127);
    cases.push((block.clone(), json.len() - 1));
    cases.push((block.clone(), json.len() + 1));
    cases.push((block.clone(), 0));
    let mut failures = 0;
    for (b, size) in cases {
        let whole = streamed(&b, size).ok().filter(|out| out.len() == size);
        for piece in [7, 4096, 70_000] {
            assert_eq!(
                in_pieces(&b, size, piece),
                whole,
                "size {size}, piece {piece}"
            );
        }
        failures += usize::from(whole.is_none());
    }
    assert!(failures > 20, "{failures}");
}

/// The block a sequence at a time (the rescue's way, up to a limit)
/// and the whole-block decoder accept the same blocks, and decode them
/// to the same bytes.
#[test]
fn sequences_decode_as_the_whole_block_does() {
    let json = sample(60_000);
    let block = lz4_flex::block::compress(&json);
    let mut cases = damaged(&block, json.len(), 89, 127);
    cases.push((block.clone(), json.len()));
    cases.push((block.clone(), json.len() - 1));
    cases.push((Vec::new(), 10));
    let mut failures = 0;
    for (b, limit) in cases {
        let whole = streamed(&b, limit);
        let mut out = Vec::new();
        let mut sequences = Pieces::resume(&b, 0, 0, limit);
        let stop = loop {
            if sequences.input_read() == b.len() {
                break Some(b.len());
            }
            match sequences.sequence_onto(&mut out) {
                Ok(true) => {}
                Ok(false) => break None,
                Err(stop) => break Some(stop.input),
            }
        };
        match &whole {
            Ok(bytes) => assert!(stop.is_none() && out == *bytes, "limit {limit}"),
            Err(_) => assert!(stop.is_some_and(|at| at <= b.len()), "limit {limit}"),
        }
        failures += usize::from(whole.is_err());
    }
    assert!(failures > 20, "{failures}");
}
