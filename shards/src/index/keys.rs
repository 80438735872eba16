//! Byte encodings of the keys and values of the document and facet trees (internal ids, field
//! ids, facet keys and string entries, geo points, counters) and of every stored bitmap.
//!
//! Invariants: every integer key is big-endian so byte order is numeric order; a number facet
//! key's byte order is the numeric order of the finite `f64` it encodes (`-0.0` equals `0.0`);
//! every facet key starts with its field id so one field's keys are contiguous.

use roaring::RoaringBitmap;
use storage_engine::ReadTransaction;

use super::short_list;
use super::trees::FIELDS_TREE;

use crate::error::{ShardError, ShardResult};

/// Bytes of a field id at the start of facet keys.
pub const FIELD_ID_BYTES: usize = 2;
/// Bytes of an internal document id key.
pub const DOCUMENT_ID_BYTES: usize = 4;
/// Bytes of an ordered number after the field id of a `facet_numbers` key.
const ORDERED_NUMBER_BYTES: usize = 8;
/// Bytes of a coordinate (an `f64`) of a stored geo point.
const COORDINATE_BYTES: usize = 8;

/// The kinds of presence bitmaps kept per faceted field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Presence {
    Exists = 0,
    Null = 1,
    Empty = 2,
}

/// A sortable `u64` whose unsigned order is the numeric order of `number`.
pub fn ordered_number(number: f64) -> u64 {
    let number = if number == 0.0 { 0.0 } else { number };
    let bits = number.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The inverse of [`ordered_number`].
pub fn number_from_ordered(ordered: u64) -> f64 {
    if ordered >> 63 == 1 {
        f64::from_bits(ordered & !(1 << 63))
    } else {
        f64::from_bits(!ordered)
    }
}

pub fn document_key(document: u32) -> [u8; DOCUMENT_ID_BYTES] {
    document.to_be_bytes()
}

pub fn document_from_key(key: &[u8]) -> ShardResult<u32> {
    let bytes: [u8; DOCUMENT_ID_BYTES] = key
        .try_into()
        .map_err(|_| ShardError::corrupted("document id key"))?;
    Ok(u32::from_be_bytes(bytes))
}

/// The value of a field path in `fields`: its field id.
pub fn encode_field_id(field: u16) -> [u8; FIELD_ID_BYTES] {
    field.to_be_bytes()
}

/// The field id a `fields` value holds.
pub fn decode_field_id(bytes: &[u8]) -> ShardResult<u16> {
    let id: [u8; FIELD_ID_BYTES] = bytes
        .try_into()
        .map_err(|_| ShardError::corrupted("field id"))?;
    Ok(u16::from_be_bytes(id))
}

/// The field id of `path` in the snapshot, if the path is known.
pub fn field_id(read: &ReadTransaction, path: &str) -> ShardResult<Option<u16>> {
    let Some(tree) = read.open_tree(FIELDS_TREE)? else {
        return Ok(None);
    };
    match tree.get(path.as_bytes())? {
        Some(bytes) => Ok(Some(decode_field_id(bytes)?)),
        None => Ok(None),
    }
}

/// The common start of every facet key of `field`.
pub fn field_prefix(field: u16) -> [u8; FIELD_ID_BYTES] {
    field.to_be_bytes()
}

pub fn number_key(field: u16, number: f64) -> Vec<u8> {
    ordered_number_key(field, ordered_number(number))
}

/// The `facet_numbers` key of `field` and a number given by its [`ordered_number`].
pub fn ordered_number_key(field: u16, ordered: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(FIELD_ID_BYTES + ORDERED_NUMBER_BYTES);
    key.extend_from_slice(&field.to_be_bytes());
    key.extend_from_slice(&ordered.to_be_bytes());
    key
}

/// The number a `facet_numbers` key holds (after its field id).
pub fn number_of_key(key: &[u8]) -> ShardResult<f64> {
    let ordered: [u8; ORDERED_NUMBER_BYTES] = key
        .get(FIELD_ID_BYTES..)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| ShardError::corrupted("number facet key"))?;
    Ok(number_from_ordered(u64::from_be_bytes(ordered)))
}

pub fn string_key(field: u16, normalized: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(FIELD_ID_BYTES + normalized.len());
    key.extend_from_slice(&field.to_be_bytes());
    key.extend_from_slice(normalized.as_bytes());
    key
}

pub fn presence_key(field: u16, presence: Presence) -> [u8; FIELD_ID_BYTES + 1] {
    let [high, low] = field.to_be_bytes();
    [high, low, presence as u8]
}

/// The normalized string a string facet key holds (after its field id).
pub fn string_of_key(key: &[u8]) -> ShardResult<&str> {
    key.get(FIELD_ID_BYTES..)
        .and_then(|rest| std::str::from_utf8(rest).ok())
        .ok_or_else(|| ShardError::corrupted("string facet key"))
}

/// Bytes of a stored bitmap holding one id: the id alone (u32 BE). Most keys of the word
/// indexes hold one document, and a roaring serialization of one id takes 18 bytes; it is
/// never this short (its header alone takes 8), nor is a short list, so every form reads back
/// unambiguously.
pub const SINGLE_ID_BYTES: usize = 4;

/// Appends `bitmap`'s stored form to `bytes`: the id alone when it holds one, else the
/// shorter of its short list ([`super::short_list`]) and its roaring serialization.
pub fn write_bitmap(bitmap: &RoaringBitmap, bytes: &mut Vec<u8>) {
    if let (1, Some(id)) = (bitmap.len(), bitmap.min()) {
        bytes.extend_from_slice(&single_id_bytes(id));
        return;
    }
    let roaring_bytes = bitmap.serialized_size();
    if short_list::encode(bitmap, roaring_bytes, bytes) {
        return;
    }
    bytes.reserve(roaring_bytes);
    bitmap
        .serialize_into(bytes)
        .expect("writing into a Vec cannot fail");
}

pub fn encode_bitmap(bitmap: &RoaringBitmap) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_bitmap(bitmap, &mut bytes);
    bytes
}

/// The id of a stored bitmap of one id (its short form, see [`write_bitmap`]), read in place.
pub fn stored_single_id(bytes: &[u8]) -> Option<u32> {
    <[u8; SINGLE_ID_BYTES]>::try_from(bytes)
        .ok()
        .map(u32::from_be_bytes)
}

/// The stored form of a bitmap of one id (see [`write_bitmap`]).
pub fn single_id_bytes(id: u32) -> [u8; SINGLE_ID_BYTES] {
    id.to_be_bytes()
}

/// Decodes a bitmap this shard wrote. The containers' order and bounds are not re-checked:
/// the page store verified the page's checksum before handing out its bytes, and only
/// [`encode_bitmap`] writes them (the check was a large share of a search's time).
pub fn decode_bitmap(bytes: &[u8]) -> ShardResult<RoaringBitmap> {
    if let Some(single) = stored_single_id(bytes) {
        let mut bitmap = RoaringBitmap::new();
        bitmap.insert(single);
        return Ok(bitmap);
    }
    if short_list::is_short_list(bytes) {
        return short_list::decode(bytes).ok_or_else(|| ShardError::corrupted("short id list"));
    }
    RoaringBitmap::deserialize_unchecked_from(bytes)
        .map_err(|_| ShardError::corrupted("roaring bitmap"))
}

/// A string facet value: the first original spelling seen, then the bitmap.
pub fn encode_string_entry(original: &str, bitmap: &RoaringBitmap) -> Vec<u8> {
    let original = &original.as_bytes()[..original.len().min(usize::from(u16::MAX))];
    let length = u16::try_from(original.len()).expect("cut to u16::MAX above");
    let mut bytes = Vec::with_capacity(2 + original.len());
    bytes.extend_from_slice(&length.to_be_bytes());
    bytes.extend_from_slice(original);
    write_bitmap(bitmap, &mut bytes);
    bytes
}

/// The original spelling (possibly cut inside a character, then lossily decoded) and bitmap.
pub fn decode_string_entry(bytes: &[u8]) -> ShardResult<(String, RoaringBitmap)> {
    let corrupted = || ShardError::corrupted("string facet entry");
    let length_bytes: [u8; 2] = bytes
        .get(..2)
        .and_then(|head| head.try_into().ok())
        .ok_or_else(corrupted)?;
    let length = usize::from(u16::from_be_bytes(length_bytes));
    let original = bytes.get(2..2 + length).ok_or_else(corrupted)?;
    let bitmap = decode_bitmap(bytes.get(2 + length..).ok_or_else(corrupted)?)?;
    Ok((String::from_utf8_lossy(original).into_owned(), bitmap))
}

/// The `geo` value of a point: latitude then longitude, each an `f64` big-endian.
pub fn encode_geo_point([latitude, longitude]: [f64; 2]) -> [u8; 2 * COORDINATE_BYTES] {
    let mut value = [0; 2 * COORDINATE_BYTES];
    value[..COORDINATE_BYTES].copy_from_slice(&latitude.to_be_bytes());
    value[COORDINATE_BYTES..].copy_from_slice(&longitude.to_be_bytes());
    value
}

/// The `[latitude, longitude]` a `geo` value holds (the bytes after the two are ignored).
pub fn decode_geo_point(value: &[u8]) -> ShardResult<[f64; 2]> {
    let corrupted = || ShardError::corrupted("geo point");
    let coordinate = |start: usize| -> ShardResult<f64> {
        let bytes: [u8; COORDINATE_BYTES] = value
            .get(start..start + COORDINATE_BYTES)
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(corrupted)?;
        Ok(f64::from_be_bytes(bytes))
    };
    Ok([coordinate(0)?, coordinate(COORDINATE_BYTES)?])
}

pub fn encode_u64(value: u64) -> [u8; 8] {
    value.to_be_bytes()
}

pub fn decode_u64(bytes: &[u8], what: &str) -> ShardResult<u64> {
    let bytes: [u8; 8] = bytes.try_into().map_err(|_| ShardError::corrupted(what))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_keys_sort_numerically_and_round_trip() {
        let numbers = [-1e300, -2.5, -1.0, 0.0, 1e-300, 1.0, 2.5, 1e300];
        for pair in numbers.windows(2) {
            assert!(ordered_number(pair[0]) < ordered_number(pair[1]));
        }
        for number in numbers {
            assert_eq!(number_from_ordered(ordered_number(number)), number);
        }
        assert_eq!(ordered_number(-0.0), ordered_number(0.0));
    }

    #[test]
    fn number_keys_geo_points_and_field_ids_round_trip() {
        for number in [-2.5, 0.0, 7.0, f64::MAX] {
            let key = number_key(300, number);
            assert_eq!(key[..FIELD_ID_BYTES], field_prefix(300));
            assert_eq!(number_of_key(&key).expect("decodes"), number);
        }
        assert!(number_of_key(&[0, 1, 2]).is_err());
        let point = [45.76, -4.84];
        assert_eq!(
            decode_geo_point(&encode_geo_point(point)).expect("decodes"),
            point
        );
        assert!(decode_geo_point(&[0; 15]).is_err());
        assert_eq!(
            decode_field_id(&encode_field_id(513)).expect("decodes"),
            513
        );
        assert!(decode_field_id(&[1, 2, 3]).is_err());
    }

    #[test]
    fn bitmaps_round_trip_with_one_id_stored_alone() {
        for ids in [
            vec![],
            vec![0],
            vec![7],
            vec![u32::MAX],
            vec![1, 2],
            (0..5000).collect(),
        ] {
            let bitmap: RoaringBitmap = ids.iter().copied().collect();
            let bytes = encode_bitmap(&bitmap);
            if ids.len() == 1 {
                assert_eq!(bytes, ids[0].to_be_bytes());
            } else {
                assert_ne!(bytes.len(), SINGLE_ID_BYTES, "{ids:?}");
            }
            assert_eq!(decode_bitmap(&bytes).expect("decodes"), bitmap);
            let entry = encode_string_entry("Blue", &bitmap);
            let (original, decoded) = decode_string_entry(&entry).expect("decodes");
            assert_eq!((original.as_str(), decoded), ("Blue", bitmap));
        }
    }

    #[test]
    fn a_single_id_written_as_roaring_still_reads() {
        let bitmap: RoaringBitmap = [42].into_iter().collect();
        let mut roaring_bytes = Vec::new();
        bitmap
            .serialize_into(&mut roaring_bytes)
            .expect("writing into a Vec cannot fail");
        assert!(roaring_bytes.len() > SINGLE_ID_BYTES);
        assert_eq!(decode_bitmap(&roaring_bytes).expect("decodes"), bitmap);
    }
}
