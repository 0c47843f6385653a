//! Pipeline stage cuts: which contiguous layers each of `p` pipeline
//! devices holds, chosen to make the slowest device as fast as it can be
//! while every device fits in memory (as PHAZE, ICML'24, chooses its
//! layer cuts by dynamic programming).
//!
//! Device `k`'s compute per micro-batch slot and its memory are each
//! linear in its dense and MoE layers ([`Linear`]) with a fixed part of its
//! own (the embedding on the first device, the logits on the last, the
//! activations of `min(p - k, m)` micro-batches in flight on device k). [`cut`] minimizes the
//! largest compute over the devices subject to every device's memory
//! within the capacity and every device holding at least one layer:
//! - layers all of one kind (a dense model, or every layer MoE): a
//!   device's best count under a level `T` is the most layers its compute
//!   and memory allow, the least feasible `T` is one of the values
//!   `fixed + n c`, found for each distinct device cost by galloping up
//!   from the mean (a lower bound on the slowest) and bisecting (`O(p log
//!   L)` each, a few steps in practice);
//! - mixed layers (dense layers before the MoE ones, or alternating): a
//!   dynamic program over contiguous cuts, `best[k][j]` the least slowest
//!   compute of devices `0..=k` holding layers `0..j` (`O(p L^2)`).
//!
//! Among the cuts that reach the optimum, the earlier devices hold fewer
//! layers (the first holds the most micro-batches in flight), and the
//! device timed is the last of the slowest.

/// A device's cost as a function of its layers: `fixed + dense d + moe m`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    /// The part that does not depend on the layers.
    pub fixed: f64,
    /// Per dense layer.
    pub dense: f64,
    /// Per MoE layer.
    pub moe: f64,
}

impl Linear {
    /// The cost with `dense` and `moe` layers.
    pub fn at(&self, dense: u64, moe: u64) -> f64 {
        self.fixed + dense as f64 * self.dense + moe as f64 * self.moe
    }
}

/// A cut problem: the layers in order and each device's costs.
#[derive(Debug, Clone, PartialEq)]
pub struct CutProblem<'a> {
    /// Whether each layer, in order, is a MoE layer.
    pub moe: &'a [bool],
    /// Each device's compute per micro-batch slot (ns), in pipeline order.
    pub compute: &'a [Linear],
    /// Each device's memory (bytes), in pipeline order.
    pub memory: &'a [Linear],
    /// The memory a device has, bytes.
    pub capacity: f64,
}

/// A cut: each device's (dense, MoE) layers, in pipeline order, and the
/// device timed (the last of the slowest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// (dense, MoE) layers per device.
    pub layers: Vec<(u64, u64)>,
    /// The slowest device (the last of them on a tie).
    pub slowest: usize,
}

/// The best cut of `problem` (see the module doc), or `None` when no cut
/// fits every device in memory (or there are fewer layers than devices).
pub fn cut(problem: &CutProblem<'_>) -> Option<Cut> {
    let p = problem.compute.len();
    let l = problem.moe.len();
    if p == 0 || p > l || problem.memory.len() != p {
        return None;
    }
    let moe = problem.moe.iter().filter(|&&m| m).count();
    let layers = if moe == 0 || moe == l {
        uniform(problem, moe == l)?
    } else {
        mixed(problem)?
    };
    // The last of the slowest.
    let mut slowest = 0;
    let mut top = f64::NEG_INFINITY;
    for (k, (c, &(d, m))) in problem.compute.iter().zip(&layers).enumerate() {
        let t = c.at(d, m);
        if t >= top {
            (slowest, top) = (k, t);
        }
    }
    Some(Cut { layers, slowest })
}

/// The most layers (of the one kind) with `cost.at(..) <= limit`, at most
/// `cap`: 0 when even none fits.
fn most(cost: &Linear, moe: bool, limit: f64, cap: u64) -> u64 {
    let at = |n: u64| if moe { cost.at(0, n) } else { cost.at(n, 0) };
    let per = if moe { cost.moe } else { cost.dense };
    let x = (limit - cost.fixed) / per;
    // Truncation is the floor here (x > 0); NaN and below zero give 0.
    let guess = if per <= 0.0 || x >= cap as f64 {
        cap
    } else if x > 0.0 {
        x as u64
    } else {
        0
    };
    // The division rounds: settle on the exact count with `at` itself.
    let mut n = guess;
    while n < cap && at(n + 1) <= limit {
        n += 1;
    }
    while n > 0 && at(n) > limit {
        n -= 1;
    }
    n
}

/// Layers all of one kind: the least level `T` at which each device's
/// most layers (compute at most `T`, memory within the capacity, at least
/// one) add up to `L`, then trimmed to `L` from the first device on.
fn uniform(problem: &CutProblem<'_>, moe: bool) -> Option<Vec<(u64, u64)>> {
    let p = problem.compute.len();
    let l = problem.moe.len() as u64;
    let cap = l - (p as u64 - 1);
    let fit: Vec<u64> = problem
        .memory
        .iter()
        .map(|m| most(m, moe, problem.capacity, cap))
        .collect();
    if fit.contains(&0) {
        return None;
    }
    let at = |c: &Linear, n: u64| if moe { c.at(0, n) } else { c.at(n, 0) };
    let per = |c: &Linear| if moe { c.moe } else { c.dense };
    // Devices with the same compute share their count at a level (the
    // ones between the ends): each device's class among the distinct
    // costs.
    let mut costs: Vec<&Linear> = Vec::new();
    let class: Vec<usize> = problem
        .compute
        .iter()
        .map(|c| match costs.iter().position(|&x| x == c) {
            Some(i) => i,
            None => {
                costs.push(c);
                costs.len() - 1
            }
        })
        .collect();
    let counts = |level: f64| -> Vec<u64> {
        let each: Vec<u64> = costs.iter().map(|c| most(c, moe, level, cap)).collect();
        class.iter().zip(&fit).map(|(&i, &f)| each[i].min(f)).collect()
    };
    let feasible = |level: f64| {
        let each: Vec<u64> = costs.iter().map(|c| most(c, moe, level, cap)).collect();
        let mut sum = 0;
        for (&i, &f) in class.iter().zip(&fit) {
            let n = each[i].min(f);
            if n == 0 {
                return false;
            }
            sum += n;
        }
        sum >= l
    };
    // The slowest is at least the mean when every device's layers cost the
    // same: a place to start each search (less a margin for rounding).
    let lower = if costs.iter().all(|&c| per(c).to_bits() == per(costs[0]).to_bits()) {
        let fixed: f64 = problem.compute.iter().map(|c| c.fixed).sum();
        (fixed + l as f64 * per(costs[0])) / p as f64 * (1.0 - 1e-9)
    } else if problem.compute.iter().all(|c| per(c) > 0.0) {
        // Else the relaxation: at a level T device k holds at most (T -
        // fixed_k) / c_k layers, and they must add up to L.
        let (share, rate) = problem
            .compute
            .iter()
            .fold((0.0, 0.0), |(s, r), c| (s + c.fixed / per(c), r + 1.0 / per(c)));
        (l as f64 + share) / rate * (1.0 - 1e-9)
    } else {
        f64::NEG_INFINITY
    };
    // The optimum is `at(c, n)` for some device's cost c and 1 <= n <= cap:
    // each distinct cost's (increasing) values searched for the least
    // feasible one below the best so far, galloping up from a lower bound
    // (the mean, or the relaxation), then bisecting.
    let mut best = f64::INFINITY;
    for &c in &costs {
        // Only this cost's values under the best so far can improve it.
        let mut top = most(c, moe, best, cap);
        while top > 0 && at(c, top) >= best {
            top -= 1;
        }
        if top == 0 || !feasible(at(c, top)) {
            continue;
        }
        let (mut lo, mut hi, mut step) = (most(c, moe, lower, top).max(1), 0, 1);
        while hi < lo {
            let probe = (lo + step - 1).min(top);
            if feasible(at(c, probe)) {
                hi = probe;
            } else {
                lo = probe + 1;
                step *= 2;
            }
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if feasible(at(c, mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        best = best.min(at(c, lo));
    }
    if !best.is_finite() {
        return None;
    }
    let mut n = counts(best);
    // Below the optimum the counts fall short: the largest candidate value
    // under it is where each device gives back its last layers.
    let below = costs
        .iter()
        .filter_map(|c| {
            let k = most(c, moe, best, cap);
            (1..=k).rev().map(|k| at(c, k)).find(|&v| v < best)
        })
        .fold(f64::NEG_INFINITY, f64::max);
    let floor: Vec<u64> = if below.is_finite() {
        counts(below).iter().zip(&n).map(|(&b, &x)| b.clamp(1, x)).collect()
    } else {
        vec![1; p]
    };
    let mut excess = n.iter().sum::<u64>() - l;
    // Give back first down to the level below, then down to one layer.
    for limit in [&floor, &vec![1; p]] {
        for (x, &f) in n.iter_mut().zip(limit.iter()) {
            let give = excess.min(x.saturating_sub(f));
            *x -= give;
            excess -= give;
        }
    }
    Some(n.into_iter().map(|x| if moe { (0, x) } else { (x, 0) }).collect())
}

/// Mixed layers: the dynamic program over contiguous cuts.
fn mixed(problem: &CutProblem<'_>) -> Option<Vec<(u64, u64)>> {
    let p = problem.compute.len();
    let l = problem.moe.len();
    // MoE layers among the first i.
    let mut moes = vec![0u64; l + 1];
    for (i, &m) in problem.moe.iter().enumerate() {
        moes[i + 1] = moes[i] + u64::from(m);
    }
    let span = |i: usize, j: usize| {
        let m = moes[j] - moes[i];
        ((j - i) as u64 - m, m)
    };
    // best[k][j]: devices 0..=k hold layers 0..j; from[k][j]: where device
    // k's layers start.
    let mut best = vec![vec![f64::INFINITY; l + 1]; p];
    let mut from = vec![vec![0usize; l + 1]; p];
    for k in 0..p {
        // Device k ends at j, with k layers at least before it and p - 1 - k after.
        for j in (k + 1)..=(l - (p - 1 - k)) {
            let starts = if k == 0 { 0..=0 } else { k..=(j - 1) };
            for i in starts {
                let before = if k == 0 { f64::NEG_INFINITY } else { best[k - 1][i] };
                if before == f64::INFINITY {
                    continue;
                }
                let (d, m) = span(i, j);
                if problem.memory[k].at(d, m) > problem.capacity {
                    continue;
                }
                let t = before.max(problem.compute[k].at(d, m));
                // The least start on a tie: later devices hold more.
                if t < best[k][j] {
                    best[k][j] = t;
                    from[k][j] = i;
                }
            }
        }
    }
    if best[p - 1][l] == f64::INFINITY {
        return None;
    }
    let mut out = vec![(0, 0); p];
    let mut j = l;
    for k in (0..p).rev() {
        let i = from[k][j];
        out[k] = span(i, j);
        j = i;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lin(fixed: f64, dense: f64, moe: f64) -> Linear {
        Linear { fixed, dense, moe }
    }

    fn solve(moe: &[bool], compute: &[Linear], memory: &[Linear], capacity: f64) -> Option<Cut> {
        cut(&CutProblem {
            moe,
            compute,
            memory,
            capacity,
        })
    }

    #[test]
    fn even_layers_keep_the_even_cut() {
        // 8 dense layers of 10 ns on 4 devices; the last also runs the
        // logits (3 ns, less than a layer): 2 layers each, the last timed
        // at 2 x 10 + 3 = 23 ns (moving a layer off it would make another
        // device 30 ns).
        let moe = [false; 8];
        let mut compute = vec![lin(0.0, 10.0, 0.0); 4];
        compute[3].fixed = 3.0;
        let memory = vec![lin(0.0, 1.0, 1.0); 4];
        let c = solve(&moe, &compute, &memory, 100.0).unwrap();
        assert_eq!(c.layers, vec![(2, 0); 4]);
        assert_eq!(c.slowest, 3);
    }

    #[test]
    fn costly_logits_take_a_layer_off_the_last_device() {
        // The logits cost 15 ns, more than a 10 ns layer. 8 layers on 4
        // devices as 2, 2, 2, 2: the last takes 2 x 10 + 15 = 35 ns. Any
        // cut with the first three at 2 layers or fewer leaves the last 2
        // or more (35 ns or more), so the best puts 3 layers on one of them
        // (30 ns) and 1 on the last (10 + 15 = 25 ns): 30 ns. The earlier
        // devices hold fewer, so (2, 2, 3, 1), timed on device 2.
        let moe = [false; 8];
        let mut compute = vec![lin(0.0, 10.0, 0.0); 4];
        compute[3].fixed = 15.0;
        let memory = vec![lin(0.0, 1.0, 1.0); 4];
        let c = solve(&moe, &compute, &memory, 100.0).unwrap();
        assert_eq!(c.layers, vec![(2, 0), (2, 0), (3, 0), (1, 0)]);
        assert_eq!(c.slowest, 2);
    }

    #[test]
    fn memory_moves_layers_off_the_first_device() {
        // 8 layers of 10 ns on 2 devices; the first keeps 2 micro-batches
        // in flight (3 bytes per layer), the second 1 (2 bytes per layer).
        // 15 bytes: the first fits 5 layers, the second 7, and compute
        // alone splits 4 + 4. 12 bytes: 4 and 6, still 4 + 4. 10 bytes: 3
        // and 5, so 3 + 5, timed on the second at 50 ns.
        let moe = [false; 8];
        let compute = vec![lin(0.0, 10.0, 0.0); 2];
        let memory = vec![lin(0.0, 3.0, 3.0), lin(0.0, 2.0, 2.0)];
        let at = |capacity: f64| solve(&moe, &compute, &memory, capacity);
        assert_eq!(at(15.0).unwrap().layers, vec![(4, 0), (4, 0)]);
        assert_eq!(at(12.0).unwrap().layers, vec![(4, 0), (4, 0)]);
        let c = at(10.0).unwrap();
        assert_eq!((c.layers, c.slowest), (vec![(3, 0), (5, 0)], 1));
        // 5 bytes: the first fits 1 layer, the second 2: 3 < 8, no cut.
        assert_eq!(at(5.0), None);
    }

    #[test]
    fn dense_layers_before_moe_ones() {
        // DeepSeek's shape in small: 2 dense layers (4 ns) then 4 MoE
        // layers (10 ns) on 2 devices. Cuts after layer i: 1: 4 | 4+40 =
        // 44; 2: 8 | 40; 3: 18 | 30; 4: 28 | 20; 5: 38 | 10. The best is
        // after the fourth: 28 | 20, timed on the first.
        let moe = [false, false, true, true, true, true];
        let compute = vec![lin(0.0, 4.0, 10.0); 2];
        let memory = vec![lin(0.0, 1.0, 1.0); 2];
        let c = solve(&moe, &compute, &memory, 100.0).unwrap();
        assert_eq!(c.layers, vec![(2, 2), (0, 2)]);
        assert_eq!(c.slowest, 0);
    }
}
