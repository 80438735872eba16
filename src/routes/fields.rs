//! `POST /indexes/{index_uid}/fields`: every field the index has ever seen (the union of its
//! shards' field maps, sorted by name) with what the settings make of it, filtered and
//! paginated as Meilisearch 1.41 answers (§1.2).

use deserr::Deserr;
use serde_json::json;

use crate::decode::JsonError;
use crate::errors::{ResponseError, codes};
use crate::http::{Request, Response};
use crate::indexes::fields::field_paths;
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::settings::field_view::{FieldDescriber, FieldsFilter};

/// Default page size of the listing.
const FIELDS_LIMIT_DEFAULT: usize = 20;

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct ListFieldsBody {
    #[deserr(default, error = JsonError<codes::InvalidIndexOffset>)]
    offset: usize,
    #[deserr(default = FIELDS_LIMIT_DEFAULT, error = JsonError<codes::InvalidIndexLimit>)]
    limit: usize,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilter>)]
    filter: Option<FilterBody>,
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError<codes::InvalidIndexFieldsFilter>, rename_all = camelCase, deny_unknown_fields)]
struct FilterBody {
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterAttributePatterns>)]
    attribute_patterns: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterDisplayed>)]
    displayed: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterSearchable>)]
    searchable: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterSortable>)]
    sortable: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterDistinct>)]
    distinct: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterRankingRule>)]
    ranking_rule: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidIndexFieldsFilterFilterable>)]
    filterable: Option<bool>,
}

impl From<FilterBody> for FieldsFilter {
    fn from(body: FilterBody) -> FieldsFilter {
        FieldsFilter {
            attribute_patterns: body.attribute_patterns,
            displayed: body.displayed,
            searchable: body.searchable,
            sortable: body.sortable,
            distinct: body.distinct,
            ranking_rule: body.ranking_rule,
            filterable: body.filterable,
        }
    }
}

/// `POST /indexes/{index_uid}/fields`.
pub async fn list(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    // The body is decoded before the index is looked up, as Meilisearch's extractors do.
    let query: ListFieldsBody = body::json::<ListFieldsBody, JsonError>(request)?;
    crate::routes::indexes::checked_path_uid(index_uid)?;
    let record = services.coordinator.index(index_uid)?;
    let filter = query.filter.map(FieldsFilter::from).unwrap_or_default();
    let describer = FieldDescriber::new(&record.settings)?;
    let fields: Vec<_> = field_paths(&services.coordinator, &record)
        .await?
        .iter()
        .map(|name| describer.describe(name))
        .filter(|field| filter.accepts(field))
        .collect();
    let results: Vec<_> = fields
        .iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|field| field.to_json())
        .collect();
    Ok(json(
        200,
        &json!({
            "results": results,
            "offset": query.offset,
            "limit": query.limit,
            "total": fields.len(),
        }),
    ))
}
