//! The on-disk form of one graph node: `[level: u8]` then, for each layer `0..=level`,
//! `[count: u8][count x neighbour record: u32 LE]`. Layer 0 comes first, so a search on the
//! bottom layer decodes only the start of the value.
//!
//! Invariant: decoding never trusts the bytes: a count that runs past the value or a level above
//! `LEVEL_MAX` is `Corrupted`, never a panic.

use crate::vector::error::VectorError;
use crate::vector::graph::insert::LEVEL_MAX;

/// Bytes of one neighbour reference.
const LINK_BYTES: usize = size_of::<u32>();

/// Encodes a node's layers (`layers.len() == level + 1`, each list at most 255 long).
pub fn encode_node(layers: &[Vec<u32>]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(
        1 + layers
            .iter()
            .map(|l| 1 + LINK_BYTES * l.len())
            .sum::<usize>(),
    );
    encode_node_into(layers, &mut bytes);
    bytes
}

/// Appends the encoding of a node's layers to `bytes` (see `encode_node`).
pub fn encode_node_into(layers: &[Vec<u32>], bytes: &mut Vec<u8>) {
    let level = u8::try_from(layers.len().saturating_sub(1)).expect("levels stay below LEVEL_MAX");
    bytes.push(level);
    for layer in layers {
        bytes.push(u8::try_from(layer.len()).expect("lists stay within LINKS_PER_LAYER_MAX"));
        layer
            .iter()
            .for_each(|record| bytes.extend_from_slice(&record.to_le_bytes()));
    }
}

fn corrupted(record: u32, what: &str) -> VectorError {
    VectorError::Corrupted(format!("graph node {record}: {what}"))
}

/// The level stored in a node value.
pub fn decode_level(record: u32, bytes: &[u8]) -> Result<u8, VectorError> {
    match bytes.first() {
        Some(level) if *level <= LEVEL_MAX => Ok(*level),
        _ => Err(corrupted(record, "bad level")),
    }
}

/// Replaces `out` with the neighbours stored for `layer` (empty when the node is below it);
/// a neighbour at or past `records_end` (no such record) is `Corrupted`.
#[inline]
pub fn decode_layer(
    record: u32,
    bytes: &[u8],
    layer: u8,
    records_end: u32,
    out: &mut Vec<u32>,
) -> Result<(), VectorError> {
    out.clear();
    let level = decode_level(record, bytes)?;
    if layer > level {
        return Ok(());
    }
    let mut position = 1;
    for current in 0..=layer {
        let count = usize::from(
            *bytes
                .get(position)
                .ok_or_else(|| corrupted(record, "truncated"))?,
        );
        position += 1;
        let end = position + count * LINK_BYTES;
        let links = bytes
            .get(position..end)
            .ok_or_else(|| corrupted(record, "truncated list"))?;
        if current == layer {
            out.extend(
                links
                    .chunks_exact(LINK_BYTES)
                    .map(|chunk| u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])),
            );
            if out.iter().any(|neighbour| *neighbour >= records_end) {
                return Err(corrupted(record, "link past the committed records"));
            }
        }
        position = end;
    }
    Ok(())
}

/// Decodes every layer of a node.
pub fn decode_node(
    record: u32,
    bytes: &[u8],
    records_end: u32,
) -> Result<Vec<Vec<u32>>, VectorError> {
    let level = decode_level(record, bytes)?;
    let mut layers = Vec::with_capacity(usize::from(level) + 1);
    for layer in 0..=level {
        let mut list = Vec::new();
        decode_layer(record, bytes, layer, records_end, &mut list)?;
        layers.push(list);
    }
    Ok(layers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nodes_round_trip_and_damage_is_an_error() {
        let layers = vec![vec![1, 2, 3], vec![], vec![70_000]];
        let bytes = encode_node(&layers);
        assert_eq!(
            decode_node(9, &bytes, 80_000).expect("decode_node succeeds"),
            layers
        );
        assert!(decode_node(9, &bytes, 70_000).is_err());
        let mut out = Vec::new();
        decode_layer(9, &bytes, 5, 80_000, &mut out).expect("decode_layer succeeds");
        assert!(out.is_empty());
        assert!(decode_node(9, &bytes[..bytes.len() - 1], 80_000).is_err());
        assert!(decode_node(9, &[200], 80_000).is_err());
        assert!(decode_node(9, &[], 80_000).is_err());
    }
}
