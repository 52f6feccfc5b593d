//! Greedy generation with a stateful decoder as optimum-intel exports it: inputs
//! `input_ids` (i64 `[1, L]`), `attention_mask` (i64 `[1, past + L]`), optionally
//! `position_ids` (i64 `[1, L]`) and `beam_idx` (i32 `[1]`), output `logits` (f32
//! `[1, L, vocab]`), the KV cache in ReadValue/Assign variables.
//!
//! The loop is openvino.genai's: the prompt runs once on a fresh state (prefill), then one
//! token per step; the mask grows by one column of ones, the positions count on from the
//! tokens already in the cache, and the next token is the argmax of the last position's
//! logits, the lowest id winning a tie (a strict `>` scan; NaN never wins).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use irun_tensor::{ElementType, Tensor};

use crate::error::{RunError, RunErrorKind};
use crate::{Executable, State};

/// The inputs a decoder export has, found by name when the executable is checked.
#[derive(Debug)]
struct DecoderInputs {
    position_ids: bool,
    beam_idx: bool,
}

/// A generation session: an executable's state (its KV cache) and the tokens in it.
#[derive(Debug)]
pub struct Generator<'a> {
    exe: &'a Executable,
    inputs: DecoderInputs,
    /// The model output holding the logits.
    logits: String,
    state: State,
    /// Tokens in the cache (prompt and generated).
    cached: usize,
    last_logits: Vec<f32>,
}

/// What a generation produced, with its timings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Generation {
    /// The generated token ids (the end-of-sequence token included when it came).
    pub tokens: Vec<i64>,
    /// The prompt's run.
    pub prefill: Duration,
    /// Each later step's run, in order.
    pub steps: Vec<Duration>,
}

impl<'a> Generator<'a> {
    /// Checks that `exe` is a stateful decoder with the inputs and the `logits` output above.
    pub fn new(exe: &'a Executable) -> Result<Generator<'a>, RunError> {
        let has = |name: &str, ty: ElementType| {
            exe.inputs().iter().any(|i| {
                i.tensor_names.iter().any(|n| n == name)
                    && (i.element_type == ty || i.element_type == ElementType::Dynamic)
            })
        };
        let not_decoder = |what: String| {
            RunError::new(
                RunErrorKind::Input,
                format!("not a decoder export that `generate` can run: {what}"),
            )
        };
        for required in ["input_ids", "attention_mask"] {
            if !has(required, ElementType::I64) {
                return Err(not_decoder(format!("it has no i64 input `{required}`")));
            }
        }
        let inputs = DecoderInputs {
            position_ids: has("position_ids", ElementType::I64),
            beam_idx: has("beam_idx", ElementType::I32),
        };
        let known = ["input_ids", "attention_mask", "position_ids", "beam_idx"];
        if let Some(other) = exe
            .inputs()
            .iter()
            .find(|i| !i.tensor_names.iter().any(|n| known.contains(&n.as_str())))
        {
            return Err(not_decoder(format!(
                "input `{}` is none of {}",
                other.tensor_names.first().unwrap_or(&other.layer_name),
                known.join(", ")
            )));
        }
        let logits = exe
            .outputs()
            .iter()
            .find(|o| o.key.split(',').any(|k| k == "logits"))
            .or_else(|| exe.outputs().first().filter(|_| exe.outputs().len() == 1))
            .ok_or_else(|| not_decoder("it has no output `logits`".into()))?
            .key
            .clone();
        if exe.variables().is_empty() {
            return Err(not_decoder(
                "it has no state variables (export it with `stateful=True`)".into(),
            ));
        }
        Ok(Generator {
            exe,
            inputs,
            logits,
            state: exe.new_state(),
            cached: 0,
            last_logits: Vec::new(),
        })
    }

    /// Forgets every token: the next run starts from an empty cache.
    pub fn reset(&mut self) {
        self.state.reset();
        self.cached = 0;
        self.last_logits.clear();
    }

    /// Tokens in the cache.
    pub fn cached(&self) -> usize {
        self.cached
    }

    /// The last position's logits of the last run.
    pub fn last_logits(&self) -> &[f32] {
        &self.last_logits
    }

    /// Runs `tokens` after those in the cache and returns all their positions' logits
    /// (`[tokens.len(), vocab]` row-major); the last row stays in [`Self::last_logits`].
    pub fn feed(&mut self, tokens: &[i64]) -> Result<Tensor, RunError> {
        let n = tokens.len();
        if n == 0 {
            return Err(RunError::new(
                RunErrorKind::Input,
                "no tokens to run (an empty prompt)".into(),
            ));
        }
        let total = self.cached + n;
        let tensor = |shape: Vec<usize>, v: Vec<i64>| {
            Arc::new(Tensor::from_i64(shape, v).expect("shape and values agree"))
        };
        let mut inputs = vec![
            ("input_ids".to_string(), tensor(vec![1, n], tokens.to_vec())),
            (
                "attention_mask".to_string(),
                tensor(vec![1, total], vec![1; total]),
            ),
        ];
        if self.inputs.position_ids {
            let positions = (self.cached as i64..total as i64).collect();
            inputs.push(("position_ids".to_string(), tensor(vec![1, n], positions)));
        }
        if self.inputs.beam_idx {
            let beams = Tensor::from_i32(vec![1], vec![0]).expect("one value");
            inputs.push(("beam_idx".to_string(), Arc::new(beams)));
        }
        let outputs = self.exe.run_values_with_state(&mut self.state, inputs)?;
        self.cached = total;
        let logits = outputs
            .into_iter()
            .find(|(k, _)| *k == self.logits)
            .map(|(_, t)| t)
            .expect("every output is returned");
        let bad = |why: &str| {
            RunError::new(
                RunErrorKind::Op,
                format!(
                    "the logits are {} {}: {why}",
                    logits.element_type(),
                    irun_tensor::fmt_shape(logits.shape())
                ),
            )
        };
        let values = logits
            .values::<f32>()
            .ok_or_else(|| bad("f32 values [1, tokens, vocab] expected"))?;
        let vocab = *logits.shape().last().ok_or_else(|| bad("a scalar"))?;
        if vocab == 0 || values.len() != n * vocab {
            return Err(bad("one row of f32 values per token expected"));
        }
        self.last_logits = values[values.len() - vocab..].to_vec();
        // The run's own buffer, reshaped: no copy of the logits.
        let shape = vec![n, vocab];
        logits
            .reshaped(shape)
            .map_err(|e| RunError::new(RunErrorKind::Op, format!("the logits: {e}")))
    }

    /// Greedy generation: the prompt on a fresh state, then up to `max_new_tokens` tokens,
    /// stopping after one of `end_tokens`. `on_token` sees each token as it comes (to
    /// stream it) and may stop the loop by returning `false`.
    pub fn generate(
        &mut self,
        prompt: &[i64],
        max_new_tokens: usize,
        end_tokens: &[i64],
        mut on_token: impl FnMut(i64) -> bool,
    ) -> Result<Generation, RunError> {
        self.reset();
        let mut out = Generation::default();
        if max_new_tokens == 0 {
            return Ok(out);
        }
        let started = Instant::now();
        self.feed(prompt)?;
        out.prefill = started.elapsed();
        loop {
            let token = argmax(&self.last_logits);
            out.tokens.push(token);
            let go_on = on_token(token);
            if !go_on || end_tokens.contains(&token) || out.tokens.len() >= max_new_tokens {
                return Ok(out);
            }
            let started = Instant::now();
            self.feed(&[token])?;
            out.steps.push(started.elapsed());
        }
    }
}

/// The index of the greatest value, the first on ties; NaN is never the greatest.
pub fn argmax(values: &[f32]) -> i64 {
    let mut best = 0;
    let mut top = f32::NEG_INFINITY;
    for (i, &v) in values.iter().enumerate() {
        if v > top {
            top = v;
            best = i;
        }
    }
    best as i64
}

/// The end-of-sequence ids an export names: `eos_token_id` (one id or a list) of
/// `generation_config.json`, else of `config.json`, in the model's directory; none when
/// neither file names one. A file that is not JSON is an error.
pub fn end_tokens(model_dir: &Path) -> Result<Vec<i64>, String> {
    for file in ["generation_config.json", "config.json"] {
        let path = model_dir.join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        let ids = match json.get("eos_token_id") {
            Some(serde_json::Value::Number(n)) => n.as_i64().into_iter().collect(),
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_i64()).collect(),
            _ => continue,
        };
        return Ok(ids);
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_of_equal_values_and_skips_nan() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0]), 1);
        assert_eq!(argmax(&[f32::NAN, 0.5, f32::NAN, 0.5]), 1);
        assert_eq!(argmax(&[f32::NEG_INFINITY; 3]), 0);
    }

    #[test]
    fn end_tokens_come_from_the_generation_config_first() {
        let dir = std::env::temp_dir().join(format!("irun-eos-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(end_tokens(&dir).unwrap(), Vec::<i64>::new());
        std::fs::write(dir.join("config.json"), r#"{"eos_token_id": 7}"#).unwrap();
        assert_eq!(end_tokens(&dir).unwrap(), vec![7]);
        std::fs::write(
            dir.join("generation_config.json"),
            r#"{"eos_token_id": [2, 5]}"#,
        )
        .unwrap();
        assert_eq!(end_tokens(&dir).unwrap(), vec![2, 5]);
        std::fs::write(dir.join("generation_config.json"), "{").unwrap();
        assert!(end_tokens(&dir).unwrap_err().contains("not JSON"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
