//! A BERT-family sentence-transformers model run on the CPU in process (the `huggingFace`
//! source): its `tokenizer.json`, `config.json` and `model.safetensors` (else
//! `pytorch_model.bin`) loaded once per process from the local directory
//! [`super::model_directory`] finds (after [`super::hub`] fetched what it lacked), texts embedded in
//! padded batches with the attention mask, pooled as `pooling` and the model's
//! `1_Pooling/config.json` say.
//!
//! Invariants:
//! - a loaded model is immutable and shared by every core through an `Arc` (the
//!   process-wide [`shared`] registry): it holds weights only, no index data and no
//!   per-request state, so sharing it breaks no shard's ownership of its data; it only
//!   saves loading the same 90+ MB once per core;
//! - `embed` is CPU-heavy and blocking: callers run it on a helper thread, never on a
//!   core's request path; inside, candle's matrix products and the tokenizer fan out on
//!   rayon, so every model runs in one process-wide pool of [`EMBEDDING_THREADS`] threads:
//!   embedding takes at most that many CPUs from the cores, however many cores embed;
//! - vectors are not normalized, as Meilisearch returns them (the vector store normalizes
//!   for the cosine metric); texts longer than `max_position_embeddings` are truncated.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::error::{EmbedError, EmbedErrorKind, Fault, NewEmbedderError, NewEmbedderErrorKind};
use super::model_directory::{self, MissingModel, PYTORCH_FILE, SAFETENSORS_FILE};

/// The token count a model without `max_position_embeddings` accepts (BERT's).
const DEFAULT_MAX_TOKENS: usize = 512;
/// The threads all local models of the process compute on (candle and the tokenizer
/// parallelize onto the rayon pool they run in).
pub const EMBEDDING_THREADS: usize = 1;
/// The name of those threads.
const EMBEDDING_THREAD_NAME: &str = "local-embedder";

/// The rayon pool every model computes in; `None` when it could not be created (then rayon's
/// global pool is used).
fn embedding_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(EMBEDDING_THREADS)
            .thread_name(|_| EMBEDDING_THREAD_NAME.to_owned())
            .build()
            .inspect_err(|error| tracing::warn!(%error, "no dedicated embedding threads"))
            .ok()
    })
    .as_ref()
}

/// The pooling file of a sentence-transformers model, relative to its directory.
const POOLING_CONFIG: &str = "1_Pooling/config.json";

/// How a text's token vectors become its embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    Mean,
    Cls,
    Max,
    MeanSqrtLength,
    LastToken,
}

/// The pooling flags of `1_Pooling/config.json`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct PoolingConfig {
    pooling_mode_cls_token: bool,
    pooling_mode_mean_tokens: bool,
    pooling_mode_max_tokens: bool,
    pooling_mode_mean_sqrt_len_tokens: bool,
    pooling_mode_lasttoken: bool,
}

impl PoolingConfig {
    /// The pooling the flags pick, in Meilisearch's order of precedence; mean when none.
    fn pooling(&self) -> Pooling {
        if self.pooling_mode_cls_token {
            Pooling::Cls
        } else if self.pooling_mode_mean_tokens {
            Pooling::Mean
        } else if self.pooling_mode_lasttoken {
            Pooling::LastToken
        } else if self.pooling_mode_mean_sqrt_len_tokens {
            Pooling::MeanSqrtLength
        } else if self.pooling_mode_max_tokens {
            Pooling::Max
        } else {
            Pooling::Mean
        }
    }
}

/// A loaded model, ready to embed.
pub struct LocalModel {
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    dimensions: usize,
}

/// The models this process has loaded, by model, revision and pooling setting.
type Registry = HashMap<(String, Option<String>, String), Arc<LocalModel>>;
static LOADED: Mutex<Option<Registry>> = Mutex::new(None);

/// The model of these settings, loaded once per process (blocking: call it off the core).
pub fn shared(
    model: &str,
    revision: Option<&str>,
    pooling: &str,
) -> Result<Arc<LocalModel>, NewEmbedderError> {
    let key = (
        model.to_owned(),
        revision.map(str::to_owned),
        pooling.to_owned(),
    );
    if let Some(loaded) = registry_get(&key) {
        return Ok(loaded);
    }
    let loaded = Arc::new(LocalModel::load(model, revision, pooling)?);
    let mut registry = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(Arc::clone(
        registry
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert(loaded),
    ))
}

/// Whether this process has loaded the model of these settings already.
pub fn is_loaded(model: &str, revision: Option<&str>, pooling: &str) -> bool {
    let key = (
        model.to_owned(),
        revision.map(str::to_owned),
        pooling.to_owned(),
    );
    registry_get(&key).is_some()
}

fn registry_get(key: &(String, Option<String>, String)) -> Option<Arc<LocalModel>> {
    let registry = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    registry.as_ref()?.get(key).cloned()
}

/// A loading error with Meilisearch's wording `what`.
fn load_error(what: impl std::fmt::Display) -> NewEmbedderError {
    NewEmbedderError {
        kind: NewEmbedderErrorKind::LoadModel(what.to_string()),
        fault: Fault::Runtime,
    }
}

/// The pooling of `setting` (`useModel`, `forceMean`, `forceCls`) for the model in `directory`.
fn pooling_of(model: &str, directory: &Path, setting: &str) -> Result<Pooling, NewEmbedderError> {
    match setting {
        "forceMean" => return Ok(Pooling::Mean),
        "forceCls" => return Ok(Pooling::Cls),
        _ => {}
    }
    let file = directory.join(POOLING_CONFIG);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(Pooling::Mean);
    };
    let config: PoolingConfig = serde_json::from_str(&text).map_err(|error| {
        load_error(format!(
            "for model '{model}', could not deserialize file at `{}` as a pooling config: {error}",
            file.display()
        ))
    })?;
    Ok(config.pooling())
}

impl LocalModel {
    /// Loads the model from disk and measures its dimensions with one test text.
    fn load(model: &str, revision: Option<&str>, pooling: &str) -> Result<Self, NewEmbedderError> {
        let directory =
            model_directory::locate(model, revision).map_err(MissingModel::into_error)?;
        let pooling = pooling_of(model, &directory, pooling)?;
        let config_file = directory.join("config.json");
        let config_text = std::fs::read_to_string(&config_file).map_err(|error| {
            load_error(format!(
                "could not open config at {}: {error}",
                config_file.display()
            ))
        })?;
        let config: Config = serde_json::from_str(&config_text).map_err(|error| {
            load_error(format!(
                "for model '{model}', could not deserialize config at {} as JSON: {error}",
                config_file.display()
            ))
        })?;
        let max_tokens = serde_json::from_str::<serde_json::Value>(&config_text)
            .ok()
            .and_then(|value| value.get("max_position_embeddings")?.as_u64())
            .and_then(|tokens| usize::try_from(tokens).ok())
            .unwrap_or(DEFAULT_MAX_TOKENS);
        let tokenizer = tokenizer(&directory.join("tokenizer.json"), max_tokens)?;
        let device = Device::Cpu;
        let variables = weights(&directory, &device)?;
        let bert = BertModel::load(variables, &config)
            .map_err(|error| load_error(format!("loading model failed:\n  - {error}")))?;
        let mut loaded = LocalModel {
            model: bert,
            tokenizer,
            pooling,
            dimensions: 0,
        };
        let test = loaded
            .embed(&[super::embedder::DIMENSION_TEST_TEXT.to_owned()])
            .map_err(NewEmbedderError::could_not_determine_dimension)?;
        loaded.dimensions = test.first().map_or(0, Vec::len);
        Ok(loaded)
    }

    /// The length of the model's vectors.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// One vector per text, in order (blocking and CPU-heavy), computed in the embedding
    /// pool.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match embedding_pool() {
            Some(pool) => pool.install(|| self.embed_here(texts)),
            None => self.embed_here(texts),
        }
    }

    fn embed_here(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|error| {
                EmbedError::new(EmbedErrorKind::Tokenize(error.to_string()), Fault::Runtime)
            })?;
        let ids: Vec<Vec<u32>> = encodings.iter().map(|e| e.get_ids().to_vec()).collect();
        let masks: Vec<Vec<u32>> = encodings
            .iter()
            .map(|e| e.get_attention_mask().to_vec())
            .collect();
        let hidden = self.forward(&ids, &masks).map_err(forward_error)?;
        Ok(hidden
            .iter()
            .zip(&masks)
            .map(|(tokens, mask)| pool(tokens, mask, self.pooling))
            .collect())
    }

    /// The last hidden states, one matrix (tokens × hidden size) per text.
    fn forward(
        &self,
        ids: &[Vec<u32>],
        masks: &[Vec<u32>],
    ) -> candle_core::Result<Vec<Vec<Vec<f32>>>> {
        let device = Device::Cpu;
        let ids = matrix(ids, &device)?;
        let masks = matrix(masks, &device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&masks))?;
        hidden.to_dtype(DType::F32)?.to_vec3()
    }
}

/// The batch × tokens tensor of equally long rows.
fn matrix(rows: &[Vec<u32>], device: &Device) -> candle_core::Result<Tensor> {
    let width = rows.first().map_or(0, Vec::len);
    let flat: Vec<u32> = rows.iter().flatten().copied().collect();
    Tensor::from_vec(flat, (rows.len(), width), device)
}

fn forward_error(error: candle_core::Error) -> EmbedError {
    EmbedError::new(
        EmbedErrorKind::ModelForward(error.to_string()),
        Fault::Runtime,
    )
}

/// The model's weights: its safetensors, else its pytorch file.
fn weights(directory: &Path, device: &Device) -> Result<VarBuilder<'static>, NewEmbedderError> {
    let safetensors = directory.join(SAFETENSORS_FILE);
    if safetensors.is_file() {
        let weights = candle_core::safetensors::load(safetensors, device).map_err(|error| {
            load_error(format!(
                "could not build weights from Safetensor weights:\n  - {error}"
            ))
        })?;
        return Ok(VarBuilder::from_tensors(weights, DType::F32, device));
    }
    VarBuilder::from_pth(directory.join(PYTORCH_FILE), DType::F32, device).map_err(|error| {
        load_error(format!(
            "could not build weights from Pytorch weights:\n  - {error}"
        ))
    })
}

/// The tokenizer of `file`, padding each batch to its longest text and truncating to
/// `max_tokens`.
fn tokenizer(file: &Path, max_tokens: usize) -> Result<Tokenizer, NewEmbedderError> {
    let mut tokenizer = Tokenizer::from_file(file).map_err(|error| {
        load_error(format!(
            "could not open tokenizer at {}: {error}",
            file.display()
        ))
    })?;
    let padding = match tokenizer.get_padding() {
        Some(padding) => PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..padding.clone()
        },
        None => PaddingParams::default(),
    };
    tokenizer.with_padding(Some(padding));
    // The tokenizer's own truncation stands (sentence-transformers models set their
    // sequence length there), never beyond what the model's positions allow.
    let truncation = match tokenizer.get_truncation() {
        Some(truncation) => TruncationParams {
            max_length: truncation.max_length.min(max_tokens),
            ..truncation.clone()
        },
        None => TruncationParams {
            max_length: max_tokens,
            ..TruncationParams::default()
        },
    };
    tokenizer
        .with_truncation(Some(truncation))
        .map_err(|error| {
            load_error(format!(
                "could not open tokenizer at {}: {error}",
                file.display()
            ))
        })?;
    Ok(tokenizer)
}

/// The embedding of one text's token vectors, the padding (mask 0) left out.
pub fn pool(tokens: &[Vec<f32>], mask: &[u32], pooling: Pooling) -> Vec<f32> {
    let real: Vec<&Vec<f32>> = tokens
        .iter()
        .zip(mask)
        .filter(|(_, keep)| **keep != 0)
        .map(|(token, _)| token)
        .collect();
    let width = tokens.first().map_or(0, Vec::len);
    match pooling {
        Pooling::Cls => real
            .first()
            .map_or_else(|| vec![0.0; width], |token| (*token).clone()),
        Pooling::LastToken => real
            .last()
            .map_or_else(|| vec![0.0; width], |token| (*token).clone()),
        Pooling::Max => (0..width)
            .map(|column| {
                real.iter()
                    .map(|token| token[column])
                    .fold(f32::NEG_INFINITY, f32::max)
            })
            .collect(),
        Pooling::Mean | Pooling::MeanSqrtLength => {
            let count = real.len().max(1) as f32;
            let divisor = if pooling == Pooling::Mean {
                count
            } else {
                count.sqrt()
            };
            (0..width)
                .map(|column| real.iter().map(|token| token[column]).sum::<f32>() / divisor)
                .collect()
        }
    }
}
