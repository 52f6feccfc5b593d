//! Winograd's F(2x2, 3x3) and F(4x4, 3x3) for 3x3 convolutions at stride 1 without
//! dilation, on planes of many channels ([`suits`]).
//!
//! Why: an `m x m` block of outputs ("tile") of one output channel takes `9 m²` multiply-adds
//! per input channel by the definition, `(m + 2)²` here: 16 for 4 outputs (F2), 36 for 16
//! (F4). The tile's `n x n` input patch `d` (`n = m + 2`) is transformed once for every
//! output channel (`V = Bᵀ d B`, additions and small multiples), the filter once, on the
//! first run (`U = G g Gᵀ`); then for each of the `n²` points `ξ`, `M_ξ = U_ξ · V_ξ` summed
//! over the input channels is one matrix product (output channels by tiles), which runs on
//! the position tiles' kernel of `tiles.rs`; and `Aᵀ M A` gives the `m x m` outputs. F2 does
//! 2.25x fewer multiply-adds than the definition, F4 4x: PointPillars' 3x3 layers were bound
//! by the multiply-adds at 90% of the FMA units' peak.
//!
//! The products are rounded otherwise than the definition's one chain per output, so the
//! results differ from the direct tiles' in the last bits; F4's larger coefficients lose a
//! little more than F2's (the tests bound both against an f64 reference). They do not
//! depend on the thread count: every value is computed by one fixed sequence of operations
//! that depends on the input and filters alone, not on which task runs it.
//!
//! The matrices (Lavin and Gray's, with `ξ = n a + b`, `a` the row, `b` the column of the
//! point): F2 has `Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]`, `G = [1 0 0; ½ ½ ½; ½ -½ ½;
//! 0 0 1]`, `Aᵀ = [1 1 1 0; 0 1 -1 -1]`; F4 the interpolation points 0, ±1, ±2 and ∞, its
//! transforms written out in `transforms.rs` and [`Tiles::g`].

use super::{tile, vectors_for, Shape2, MR, NR};
use crate::op::{codes, OpError};
use crate::par;

#[cfg(test)]
mod tests;
mod transforms;

use transforms::{transform_input, transform_output, InputRows, OutputScratch};

/// Which algorithm: the size of the output tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tiles {
    /// F(2x2, 3x3).
    F2,
    /// F(4x4, 3x3).
    F4,
}

impl Tiles {
    /// Outputs per tile side.
    fn m(self) -> usize {
        match self {
            Tiles::F2 => 2,
            Tiles::F4 => 4,
        }
    }

    /// Inputs per tile side, `m + 2`.
    fn n(self) -> usize {
        self.m() + 2
    }

    /// `G` applied to three filter values (the first `n` of the six).
    fn g(self, [g0, g1, g2]: [f64; 3]) -> [f64; 6] {
        match self {
            Tiles::F2 => [g0, (g0 + g1 + g2) / 2.0, (g0 - g1 + g2) / 2.0, g2, 0.0, 0.0],
            Tiles::F4 => [
                g0 / 4.0,
                -(g0 + g1 + g2) / 6.0,
                -(g0 - g1 + g2) / 6.0,
                (g0 + 2.0 * g1 + 4.0 * g2) / 24.0,
                (g0 - 2.0 * g1 + 4.0 * g2) / 24.0,
                g2,
            ],
        }
    }
}

/// Bytes of transformed input one band holds (16 values per tile and input channel), which
/// the products read once per block of `MR` output channels: within L2 beside the filters.
const BAND_BYTES: usize = 384 << 10;

/// Which tiles run a convolution of `ci` into `co` channels on the planes of `s` with a
/// `kernel`-sized filter faster than the direct tiles, if any. Measured here (2 threads, lone
/// layers with bias and ReLU; direct, F2, F4): 64 channels at 56x56 1.16, 1.04-1.10, 0.74-0.78
/// ms; 128 at 28x28 1.12, 1.00-1.05, 1.02-1.18 ms (F4's 7x7 tiles of a 28x28 plane leave
/// few per band); PointPillars' 256x256 and 128x128 layers (64 and 128 channels) 26.7 and
/// 25.1, about 16-19 and 15-19, 13.5 and 11 ms. At 14x14 (256 channels, 1.11 -> 1.3 ms with
/// F2) and 7x7 (512, 1.1 -> 2.1 ms) the transforms lose: the transformed filters are 16/9
/// (F4: 4x) the size of the filters, and the few tiles of a small plane do not repay
/// reading them. Fewer than 32 channels were not measured; the transforms' share of the
/// work grows as the channels shrink.
pub(super) fn suits(s: &Shape2, kernel: [usize; 2], ci: usize, co: usize) -> Option<Tiles> {
    let [oh, ow] = s.out;
    let fits = kernel == [3, 3]
        && s.stride == [1, 1]
        && s.dil == [1, 1]
        && ci >= 32
        && co >= 32
        && oh >= 20
        && ow >= 20;
    if !fits {
        return None;
    }
    Some(if oh >= 40 && ow >= 40 {
        Tiles::F4
    } else {
        Tiles::F2
    })
}

/// The filters `[co, ci, 3, 3]` transformed: `U_ξ` for each of the `n²` points, `[n²][co_pad][ci]`
/// with zero rows from `co` to `co_pad` (a whole number of `MR`-channel tiles).
pub(super) struct WinogradFilters {
    pub(super) tiles: Tiles,
    co: usize,
    ci: usize,
    co_pad: usize,
    u: Vec<f32>,
}

/// Sizes only: the transformed filters run to megabytes.
impl std::fmt::Debug for WinogradFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WinogradFilters({:?}, co {}, ci {}, {} values)",
            self.tiles,
            self.co,
            self.ci,
            self.u.len()
        )
    }
}

impl WinogradFilters {
    /// From the filters `w [co, ci, 3, 3]`, each `U = G g Gᵀ` computed in f64 and rounded
    /// once.
    pub(super) fn new(
        w: &[f32],
        co: usize,
        ci: usize,
        tiles: Tiles,
    ) -> Result<WinogradFilters, OpError> {
        let co_pad = co.next_multiple_of(MR);
        let n = tiles.n();
        let expected = co.checked_mul(ci).and_then(|v| v.checked_mul(9));
        if expected != Some(w.len()) {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: the filters are not [co, ci, 3, 3]",
            ));
        }
        let len = irun_tensor::element_count(&[n * n, co_pad, ci])
            .ok_or_else(|| OpError::new(codes::MEMORY, "the Winograd filters overflow memory"))?;
        let mut u = crate::kernel::try_zeroed::<f32>(len)?;
        for o in 0..co {
            for c in 0..ci {
                let g = &w[(o * ci + c) * 9..][..9];
                // Down the filter's columns, then along its rows.
                let cols: [[f64; 6]; 3] = std::array::from_fn(|kx| {
                    tiles.g(std::array::from_fn(|ky| g[ky * 3 + kx] as f64))
                });
                for a in 0..n {
                    let row = tiles.g([cols[0][a], cols[1][a], cols[2][a]]);
                    for (b, &value) in row.iter().take(n).enumerate() {
                        u[((n * a + b) * co_pad + o) * ci + c] = value as f32;
                    }
                }
            }
        }
        Ok(WinogradFilters {
            tiles,
            co,
            ci,
            co_pad,
            u,
        })
    }

    pub(super) fn byte_size(&self) -> usize {
        self.u.len() * 4
    }

    /// Point `p` of the transform of output channel `o`'s filter for input channel `c`.
    #[cfg(test)]
    pub(super) fn point(&self, p: usize, o: usize, c: usize) -> f32 {
        self.u[(p * self.co_pad + o) * self.ci + c]
    }

    /// The convolution of `x [n, ci, *s.input]` into `[n, co, *s.out]` (3x3, stride 1, no
    /// dilation), calling `each` on every stretch of the output (`(flat index of its first
    /// value, values)`) once computed: a band's rows of one channel at a time, while they are
    /// in cache.
    pub(super) fn run(
        &self,
        x: &[f32],
        s: &Shape2,
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<Vec<f32>, OpError> {
        let [oh, ow] = s.out;
        let positions = oh * ow;
        let planes = s.n * self.co;
        if positions == 0 || planes == 0 {
            return Ok(Vec::new());
        }
        let tiles = self.tiles;
        let (m, points) = (tiles.m(), tiles.n() * tiles.n());
        let (th, tw) = (oh.div_ceil(m), ow.div_ceil(m));
        // Tile rows per band: enough tiles for the widest tile of the products, as many as
        // BAND_BYTES holds, at least one row.
        let fit = (BAND_BYTES / (4 * points).saturating_mul(self.ci).saturating_mul(tw)).max(1);
        let kb = NR.div_ceil(tw).min(fit).clamp(1, th);
        let band_tiles = kb * tw;
        let vectors = vectors_for(band_tiles);
        let g = Geometry {
            tiles,
            tw,
            kb,
            vectors,
            tp: band_tiles.next_multiple_of(16 * vectors),
        };
        let bands = th.div_ceil(kb);
        let wanted = 4 * par::threads();
        let per_task = bands.div_ceil(wanted.min(bands).max(1));
        let band_tasks = bands.div_ceil(per_task);
        // A small plane is one band or a few (ResNet's 14x14: one): its tasks also split the
        // output channels, by whole tiles of `MR`; each such task transforms the band's
        // input again, a few percent of its products.
        let co_tiles = self.co_pad / MR;
        let tiles_per_group = co_tiles.div_ceil((wanted / band_tasks).clamp(1, co_tiles));
        let co_groups = co_tiles.div_ceil(tiles_per_group);
        // Each task writes output rows `m kb per_task` at a time of its channel planes: its
        // parts of the planes, cut here so that tasks hold disjoint slices.
        let task_rows = m * kb * per_task;
        let mut out = par::build(planes * positions, positions, &|_, fill| {
            fill.repeat(0.0, fill.remaining())
        })?;
        let mut work: Vec<Vec<&mut [f32]>> = (0..band_tasks * co_groups)
            .map(|_| Vec::with_capacity(planes))
            .collect();
        for (p, plane) in out.chunks_mut(positions).enumerate() {
            let group = (p % self.co) / MR / tiles_per_group;
            for (t, part) in plane.chunks_mut(task_rows * ow).enumerate() {
                work[t * co_groups + group].push(part);
            }
        }
        par::try_for_each_mut(&mut work, &|i, parts| {
            let (t, group) = (i / co_groups, i % co_groups);
            let task = Task {
                bands: t * per_task..((t + 1) * per_task).min(bands),
                co_tiles: group * tiles_per_group..((group + 1) * tiles_per_group).min(co_tiles),
            };
            // A task's scratch is bounded by BAND_BYTES but for a single tile row of a huge
            // plane: refused as a memory error, never an abort.
            self.run_task(x, s, &g, &task, parts, each)
                .map_err(|e| (i, e))
        })?;
        Ok(out)
    }

    /// The task's bands of every item, for its output channels, into `parts` (per item and
    /// channel of the task, its rows of the plane from the first band's first).
    fn run_task(
        &self,
        x: &[f32],
        s: &Shape2,
        g: &Geometry,
        task: &Task,
        parts: &mut [&mut [f32]],
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<(), OpError> {
        let [oh, ow] = s.out;
        let (ci, co) = (self.ci, self.co);
        let in_plane = s.input[0] * s.input[1];
        let nr = 16 * g.vectors;
        let c0 = task.co_tiles.start * MR;
        let channels = (task.co_tiles.end * MR).min(co) - c0;
        let (m, points) = (g.tiles.m(), g.tiles.n() * g.tiles.n());
        let v_len = irun_tensor::element_count(&[points, ci, g.tp])
            .ok_or_else(transforms::scratch_overflow)?;
        let mut v = crate::kernel::try_zeroed::<f32>(v_len)?;
        let mut mb = vec![[[0f32; NR]; MR]; points];
        let mut rows = InputRows::new(g)?;
        let mut scratch = OutputScratch::new();
        let first_row = m * g.kb * task.bands.start;
        for band in task.bands.clone() {
            let (ty0, ty1) = (band * g.kb, ((band + 1) * g.kb).min(oh.div_ceil(m)));
            let row0 = m * ty0;
            let out_rows = (m * ty1).min(oh) - row0;
            let tiles = (ty1 - ty0) * g.tw;
            let local = (row0 - first_row) * ow..(row0 - first_row + out_rows) * ow;
            for item in 0..s.n {
                let xi = &x[item * ci * in_plane..][..ci * in_plane];
                transform_input(xi, s, g, ty0..ty1, &mut v, &mut rows);
                for ct in task.co_tiles.clone() {
                    // The tile's channels, counted from the task's first.
                    let first = ct * MR - c0;
                    let here = MR.min(channels - first);
                    for t0 in (0..tiles).step_by(nr) {
                        for (p, mb) in mb.iter_mut().enumerate() {
                            let u = &self.u[(p * self.co_pad + ct * MR) * ci..][..MR * ci];
                            let v = &v[p * ci * g.tp..][..ci * g.tp];
                            tile(here, g.vectors, u, v, g.tp, &[0], t0, mb);
                        }
                        for r in 0..here {
                            let part = &mut parts[item * channels + first + r][local.clone()];
                            let count = nr.min(tiles - t0);
                            transform_output(
                                g,
                                &mut scratch,
                                &mb,
                                r,
                                t0..t0 + count,
                                [out_rows, ow],
                                part,
                            );
                        }
                    }
                    for r in 0..here {
                        let plane = item * co + c0 + first + r;
                        let part = &mut parts[item * channels + first + r][local.clone()];
                        each(plane * oh * ow + row0 * ow, part);
                    }
                }
            }
        }
        Ok(())
    }
}

/// What one task computes: bands of tile rows, by tiles of `MR` output channels.
struct Task {
    bands: std::ops::Range<usize>,
    co_tiles: std::ops::Range<usize>,
}

/// How a plane is cut into bands of tiles.
struct Geometry {
    tiles: Tiles,
    /// Tiles per tile row.
    tw: usize,
    /// Tile rows per band.
    kb: usize,
    /// 16-lane vectors per product tile.
    vectors: usize,
    /// Tiles per band rounded up to whole product tiles: the row length of `V_ξ`.
    tp: usize,
}
