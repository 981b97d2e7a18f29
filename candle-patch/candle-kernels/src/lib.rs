mod ptx {
    include!(concat!(env!("OUT_DIR"), "/ptx.rs"));
}

mod fatbin {
    include!(concat!(env!("OUT_DIR"), "/fatbin.rs"));
}

#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Id {
    Affine,
    Binary,
    Cast,
    Conv,
    Fill,
    Indexing,
    LayerNorm,
    Optim,
    Quantized,
    Reduce,
    Rnn,
    Sort,
    Ternary,
    Unary,
}

pub const ALL_IDS: [Id; 14] = [
    Id::Affine,
    Id::Binary,
    Id::Cast,
    Id::Conv,
    Id::Fill,
    Id::Indexing,
    Id::LayerNorm,
    Id::Optim,
    Id::Quantized,
    Id::Reduce,
    Id::Rnn,
    Id::Sort,
    Id::Ternary,
    Id::Unary,
];

pub struct Module {
    index: usize,
    ptx: &'static str,
    fatbin: Option<&'static [u8]>,
}

impl Module {
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn ptx(&self) -> &'static str {
        self.ptx
    }

    /// The module compiled for the compute capabilities listed at build time (by default 8.0,
    /// 8.6, 8.9 and 9.0) plus the PTX of the highest one, as a fatbin to load instead of the PTX
    /// (which the driver JIT-compiles the first time, tens of seconds for a large module). Only
    /// some modules have one. It holds the same kernels as the PTX, which stays the fallback for
    /// GPUs the fatbin has no code for.
    pub fn fatbin(&self) -> Option<&'static [u8]> {
        self.fatbin
    }
}

const fn module_index(id: Id) -> usize {
    let mut i = 0;
    while i < ALL_IDS.len() {
        if ALL_IDS[i] as u32 == id as u32 {
            return i;
        }
        i += 1;
    }
    panic!("id not found")
}

macro_rules! mdl {
    ($cst:ident, $id:ident) => {
        mdl!($cst, $id, None);
    };
    ($cst:ident, $id:ident, $fatbin:expr) => {
        pub const $cst: Module = Module {
            index: module_index(Id::$id),
            ptx: ptx::$cst,
            fatbin: $fatbin,
        };
    };
}

mdl!(AFFINE, Affine);
mdl!(BINARY, Binary);
mdl!(CAST, Cast);
mdl!(CONV, Conv);
mdl!(FILL, Fill);
mdl!(INDEXING, Indexing);
mdl!(LAYER_NORM, LayerNorm, fatbin::LAYER_NORM);
mdl!(OPTIM, Optim);
mdl!(QUANTIZED, Quantized);
mdl!(REDUCE, Reduce);
mdl!(RNN, Rnn);
mdl!(SORT, Sort);
mdl!(TERNARY, Ternary);
mdl!(UNARY, Unary);

/// The tier registry of the [`LAYER_NORM`] kernels (`X(tag, lanes, vecs, smem, prefetch,
/// min_blocks)` rows of C macros): the module is instantiated from it, the host reads it to pick
/// and name the kernels.
pub const LAYER_NORM_TIERS: &str = include_str!("layer_norm_tiers.cuh");
