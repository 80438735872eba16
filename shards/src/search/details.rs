//! A document's score details, step by step: what each ranking step says of one document,
//! from its term occurrences, the sort values of the sort steps and its field lengths.
//!
//! Both rankings use it: the full one ([`super::execute`] ranks every matching document) and
//! the lazy bucket sort ([`super::refine`] splits a bucket by one step's details).
//!
//! Invariants: [`details`] gives one detail per step (exactness gives its two halves, see
//! [`RankingContext::exactness`]), in step order; the sort tables hold one entry per sort or
//! geo sort step, in step order ([`sort_tables`]), and a step without its table is
//! [`ShardError::Corrupted`], never a panic; field lengths are read in ascending id order with
//! one reused buffer ([`FieldLengthsReader`]).

use std::collections::BTreeMap;

use roaring::RoaringBitmap;
use storage_engine::{PathLookup, ReadTransaction};

use crate::error::{ShardError, ShardResult};
use crate::index::inverted::{FieldLengths, decode_field_lengths};
use crate::index::keys::document_key;
use crate::index::trees::FIELD_LENGTHS_TREE;

use super::facet_columns::FacetColumns;
use super::geo_sort::{GeoPoints, geo_points};
use super::occurrences::TermOccurrence;
use super::ranking::{Kept, RankingContext};
use super::score::{ScoreDetail, SortValue};
use super::sort_values::sort_values;
use super::steps::Step;

/// Per sort step (in step order), the values it orders documents by.
pub(super) type SortTables = Vec<StepValues>;

/// The values one sort step orders documents by.
pub(super) enum StepValues {
    /// A field's sort values.
    Field(BTreeMap<u32, SortValue>),
    /// The documents' geo points.
    Geo(GeoPoints),
}

/// Whether `step` orders documents by stored values (a field's or the geo points).
pub(super) fn is_sort(step: &Step) -> bool {
    matches!(step, Step::Sort(_) | Step::GeoSort(_))
}

/// The detail of a sort or geo sort step for `document`, from its values (`None` for the
/// other steps, or values of the wrong kind).
pub(super) fn sort_detail(step: &Step, values: &StepValues, document: u32) -> Option<ScoreDetail> {
    match (step, values) {
        (Step::Sort(rule), StepValues::Field(table)) => Some(ScoreDetail::Sort {
            field: rule.field.clone(),
            ascending: rule.ascending,
            value: table.get(&document).cloned().unwrap_or(SortValue::Missing),
        }),
        (Step::GeoSort(rule), StepValues::Geo(points)) => Some(ScoreDetail::GeoSort {
            rule: *rule,
            value: points.get(&document).copied(),
        }),
        _ => None,
    }
}

/// Per sort step of `steps`, the sort values of `documents`.
pub(super) fn sort_tables(
    read: &ReadTransaction,
    columns: &FacetColumns,
    steps: &[Step],
    documents: &RoaringBitmap,
) -> ShardResult<SortTables> {
    let mut tables = Vec::new();
    for step in steps {
        match step {
            Step::Sort(rule) => tables.push(StepValues::Field(sort_values(
                read,
                columns,
                &rule.field,
                rule.ascending,
                documents,
            )?)),
            Step::GeoSort(_) => tables.push(StepValues::Geo(geo_points(read, documents)?)),
            _ => {}
        }
    }
    debug_assert_eq!(
        tables.len(),
        steps.iter().filter(|step| is_sort(step)).count(),
        "one table per sort step"
    );
    Ok(tables)
}

/// The details of `document` for each of `steps` (`sources` holds their sort values and
/// reads field lengths).
pub(super) fn details(
    context: &RankingContext<'_>,
    steps: &[Step],
    sources: &mut DetailSources<'_, '_>,
    document: u32,
    kept: &Kept,
    occurrences: &[Vec<TermOccurrence>],
) -> ShardResult<Vec<ScoreDetail>> {
    let mut details = Vec::with_capacity(steps.len() + 1);
    let mut sort_index = 0;
    for step in steps {
        match step {
            Step::Words => details.push(context.words(kept)),
            Step::Typo => details.push(context.typo(kept, occurrences)),
            Step::Proximity => details.push(context.proximity(kept, occurrences)),
            Step::AttributeRank => details.push(context.attribute_rank(kept, occurrences)),
            Step::WordPosition => details.push(context.word_position(kept, occurrences)),
            Step::Exactness => {
                let lengths = sources.lengths.lengths(document)?;
                details.extend(context.exactness(kept, occurrences, lengths));
            }
            Step::Sort(_) | Step::GeoSort(_) => {
                let detail = sources
                    .tables
                    .get(sort_index)
                    .and_then(|values| sort_detail(step, values, document))
                    .ok_or_else(|| ShardError::Corrupted("sort table".to_owned()))?;
                details.push(detail);
                sort_index += 1;
            }
        }
    }
    Ok(details)
}

/// What per-document details read besides the occurrences: sort values and field lengths.
pub(super) struct DetailSources<'a, 't> {
    pub(super) tables: &'a SortTables,
    pub(super) lengths: FieldLengthsReader<'t>,
}

/// The field lengths of documents, read one document at a time; reading them in ascending
/// id order reuses the path of the previous lookup, and every document's lengths are decoded
/// into the same buffer (nothing is allocated per document).
pub(super) struct FieldLengthsReader<'t> {
    /// `None` when the shard has no field lengths tree yet.
    lookup: Option<PathLookup<'t>>,
    lengths: Vec<(u16, u16)>,
}

impl<'t> FieldLengthsReader<'t> {
    pub(super) fn new(read: &'t ReadTransaction) -> ShardResult<FieldLengthsReader<'t>> {
        let lookup = read
            .open_tree(FIELD_LENGTHS_TREE)?
            .map(|tree| tree.path_lookup());
        Ok(FieldLengthsReader {
            lookup,
            lengths: Vec::new(),
        })
    }

    /// One document's field lengths, until the next call.
    pub(super) fn lengths(&mut self, document: u32) -> ShardResult<FieldLengths<'_>> {
        self.lengths.clear();
        if let Some(lookup) = &mut self.lookup {
            if let Some(bytes) = lookup.get(&document_key(document))? {
                decode_field_lengths(bytes, &mut self.lengths)?;
            }
        }
        Ok(FieldLengths(&self.lengths))
    }
}
