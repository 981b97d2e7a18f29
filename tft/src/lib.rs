//! A compact Temporal Fusion Transformer (Lim et al., 2021) on candle, trained on weekly
//! Mauna Loa CO2 or on a synthetic hourly multi-series panel ([`synth`]). Every LayerNorm goes
//! through `candle-layer-norm-compat` (fused kernel or differentiable composite, see [`norm`]).

pub mod attention;
pub mod data;
pub mod grn;
pub mod heap;
pub mod init;
pub mod loss;
pub mod model;
pub mod norm;
pub mod profile;
pub mod synth;
pub mod train;
pub mod vsn;

pub use model::{Tft, TftConfig, TftOutput};
