// Probe of 2026-12-04 (not built by the workspace): a standalone crate (/tmp/mb) whose main.rs this is,
// with layer_norm_x86.rs included by #[path] and two copies of it with FUSE_COLS 0 / usize::MAX
// (nofuse.rs, allfuse.rs). 'R=ROWS C=COLS ./mb': best of 200 single-threaded calls of each variant. Written
// against the module as it was at 18:50-19:15 UTC (Isa's variants have since become private).
#[allow(dead_code)]
mod nofuse;
#[allow(dead_code)]
mod allfuse;
#[path = "/work/main/candle-patch/candle-nn/src/layer_norm_x86.rs"]
#[allow(dead_code)]
mod lnx;
use std::time::Instant;

#[inline(always)]
fn row_generic<const W: usize>(x: &[f32], dy: &[f32], a: &[f32], dx: &mut [f32], da: &mut [f32], db: &mut [f32], eps: f32) {
    let n = x.len();
    let shift = x[0];
    let mut s = [[0f32; W]; 4];
    for (((x, dy), a), _) in x.chunks_exact(W).zip(dy.chunks_exact(W)).zip(a.chunks_exact(W)).zip(0..) {
        for j in 0..W {
            let d = x[j] - shift; let g = dy[j] * a[j];
            s[0][j] += d; s[1][j] += d * d; s[2][j] += g; s[3][j] += g * d;
        }
    }
    let r: [f32; 4] = std::array::from_fn(|k| {
        let mut l = s[k];
        let mut w = W / 2;
        while w > 0 { for j in 0..w { l[j] = l[j] + l[j + w]; } w /= 2; }
        l[0]
    });
    let nf = n as f32;
    let mean = r[0] / nf;
    let var = (r[1] / nf - mean * mean).max(0.0);
    let rstd = 1.0 / (var + eps).sqrt();
    let mg = r[2] / nf;
    let mgx = rstd * (r[3] / nf - mean * mg);
    for ((((((x, dy), a), dx), da), db), _) in x.chunks_exact(W).zip(dy.chunks_exact(W)).zip(a.chunks_exact(W)).zip(dx.chunks_exact_mut(W)).zip(da.chunks_exact_mut(W)).zip(db.chunks_exact_mut(W)).zip(0..) {
        for j in 0..W {
            let xhat = (x[j] - shift - mean) * rstd;
            dx[j] = (dy[j] * a[j] - mg - xhat * mgx) * rstd;
            da[j] += dy[j] * xhat;
            db[j] += dy[j];
        }
    }
}

fn all_default<const W: usize>(xs: &[f32], dys: &[f32], a: &[f32], dxs: &mut [f32], da: &mut [f32], db: &mut [f32]) {
    let n = a.len();
    for ((x, dy), dx) in xs.chunks(n).zip(dys.chunks(n)).zip(dxs.chunks_mut(n)) {
        row_generic::<W>(x, dy, a, dx, da, db, 1e-5);
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn all_avx2<const W: usize>(xs: &[f32], dys: &[f32], a: &[f32], dxs: &mut [f32], da: &mut [f32], db: &mut [f32]) {
    let n = a.len();
    for ((x, dy), dx) in xs.chunks(n).zip(dys.chunks(n)).zip(dxs.chunks_mut(n)) {
        row_generic::<W>(x, dy, a, dx, da, db, 1e-5);
    }
}

#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn all_avx512<const W: usize>(xs: &[f32], dys: &[f32], a: &[f32], dxs: &mut [f32], da: &mut [f32], db: &mut [f32]) {
    let n = a.len();
    for ((x, dy), dx) in xs.chunks(n).zip(dys.chunks(n)).zip(dxs.chunks_mut(n)) {
        row_generic::<W>(x, dy, a, dx, da, db, 1e-5);
    }
}


use std::arch::x86_64::*;
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn all_intr(xs: &[f32], dys: &[f32], a: &[f32], dxs: &mut [f32], da: &mut [f32], db: &mut [f32]) {
    let n = a.len();
    assert!(n % 16 == 0);
    let nv = n / 16;
    let nf = n as f32;
    for ((x, dy), dx) in xs.chunks(n).zip(dys.chunks(n)).zip(dxs.chunks_mut(n)) {
        let shift = _mm512_set1_ps(x[0]);
        let (mut s0, mut s1, mut s2, mut s3) = (_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps());
        for v in 0..nv {
            let xv = _mm512_loadu_ps(x.as_ptr().add(16 * v));
            let dv = _mm512_loadu_ps(dy.as_ptr().add(16 * v));
            let av = _mm512_loadu_ps(a.as_ptr().add(16 * v));
            let d = _mm512_sub_ps(xv, shift);
            let g = _mm512_mul_ps(dv, av);
            s0 = _mm512_add_ps(s0, d);
            s1 = _mm512_fmadd_ps(d, d, s1);
            s2 = _mm512_add_ps(s2, g);
            s3 = _mm512_fmadd_ps(g, d, s3);
        }
        let r0 = _mm512_reduce_add_ps(s0); let r1 = _mm512_reduce_add_ps(s1);
        let r2 = _mm512_reduce_add_ps(s2); let r3 = _mm512_reduce_add_ps(s3);
        let mean = r0 / nf;
        let var = (r1 / nf - mean * mean).max(0.0);
        let rstd = 1.0 / (var + 1e-5f32).sqrt();
        let mg = r2 / nf;
        let mgx = rstd * (r3 / nf - mean * mg);
        let c = _mm512_set1_ps(x[0] + mean);
        let rs = _mm512_set1_ps(rstd); let mgv = _mm512_set1_ps(mg); let mgxv = _mm512_set1_ps(mgx);
        for v in 0..nv {
            let o = 16 * v;
            let xv = _mm512_loadu_ps(x.as_ptr().add(o));
            let dv = _mm512_loadu_ps(dy.as_ptr().add(o));
            let av = _mm512_loadu_ps(a.as_ptr().add(o));
            let xhat = _mm512_mul_ps(_mm512_sub_ps(xv, c), rs);
            let t = _mm512_sub_ps(_mm512_fmsub_ps(dv, av, mgv), _mm512_mul_ps(xhat, mgxv));
            _mm512_storeu_ps(dx.as_mut_ptr().add(o), _mm512_mul_ps(t, rs));
            let dap = da.as_mut_ptr().add(o); let dbp = db.as_mut_ptr().add(o);
            _mm512_storeu_ps(dap, _mm512_fmadd_ps(dv, xhat, _mm512_loadu_ps(dap)));
            _mm512_storeu_ps(dbp, _mm512_add_ps(dv, _mm512_loadu_ps(dbp)));
        }
    }
}
fn main() {
    let rows: usize = std::env::var("R").ok().and_then(|v| v.parse().ok()).unwrap_or(4096);
    let cols: usize = std::env::var("C").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let len = rows * cols;
    let xs: Vec<f32> = (0..len).map(|i| ((i * 7919 % 1000) as f32) * 0.001 + 0.5).collect();
    let dys: Vec<f32> = (0..len).map(|i| ((i * 104729 % 997) as f32) * 0.001 - 0.5).collect();
    let a: Vec<f32> = (0..cols).map(|i| 1.0 + i as f32 * 0.01).collect();
    let mut dxs = vec![0f32; len];
    let mut da = vec![0f32; cols];
    let mut db = vec![0f32; cols];
    let variants: Vec<(&str, Box<dyn Fn(&mut [f32], &mut [f32], &mut [f32])>)> = vec![
        ("sse W4", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| all_default::<4>(&xs, &dys, &a, dx, da, db))),
        ("sse W8", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| all_default::<8>(&xs, &dys, &a, dx, da, db))),
        ("avx2 W8", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| unsafe { all_avx2::<8>(&xs, &dys, &a, dx, da, db) })),
        ("avx2 W16", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| unsafe { all_avx2::<16>(&xs, &dys, &a, dx, da, db) })),
        ("avx512 W16", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| unsafe { all_avx512::<16>(&xs, &dys, &a, dx, da, db) })),
        ("intr512", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| unsafe { all_intr(&xs, &dys, &a, dx, da, db) })),
        ("lnx512", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| { let dx: &mut [std::mem::MaybeUninit<f32>] = unsafe { std::mem::transmute(dx) }; lnx::bwd(lnx::Isa::Avx512, (&xs, &dys), &a, 1e-5, dx, (da, db)) })),
        ("lnx2", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| { let dx: &mut [std::mem::MaybeUninit<f32>] = unsafe { std::mem::transmute(dx) }; lnx::bwd(lnx::Isa::Avx2, (&xs, &dys), &a, 1e-5, dx, (da, db)) })),
        ("nofuse512", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| { let dx: &mut [std::mem::MaybeUninit<f32>] = unsafe { std::mem::transmute(dx) }; nofuse::bwd(nofuse::Isa::Avx512, (&xs, &dys), &a, 1e-5, dx, (da, db)) })),
        ("allfuse512", Box::new(|dx: &mut [f32], da: &mut [f32], db: &mut [f32]| { let dx: &mut [std::mem::MaybeUninit<f32>] = unsafe { std::mem::transmute(dx) }; allfuse::bwd(allfuse::Isa::Avx512, (&xs, &dys), &a, 1e-5, dx, (da, db)) })),
    ];
    for round in 0..3 {
        for (name, f) in &variants {
            let mut best = f64::MAX;
            for _ in 0..200 {
                let t = Instant::now();
                f(&mut dxs, &mut da, &mut db);
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!("round {round} {name}: {:.1} us (chk {})", best * 1e6, dxs[len / 3] + da[3]);
        }
    }
}
