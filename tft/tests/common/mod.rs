//! Shared by the integration tests: a model small enough to train in seconds on CPU.

use tft::data::{FUTURE_VARS, PAST_VARS};
use tft::TftConfig;

/// hidden 16, 4 heads, 16 steps of lookback, 4 of horizon, the CO2 dataset's variables.
pub fn small_cfg() -> TftConfig {
    TftConfig {
        hidden: 16,
        n_heads: 4,
        lookback: 16,
        horizon: 4,
        n_past: PAST_VARS.len(),
        n_future: FUTURE_VARS.len(),
        ..TftConfig::default()
    }
}
