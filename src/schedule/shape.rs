//! The shape of a product network: its dimensions ([`dims`], [`symmetric`]),
//! the exact all-gather cut in closed form ([`gather_cut`], [`cut_set`]),
//! its link classes under translation ([`link_classes`]), and a network
//! of NPUs and switches recognised as a product of switch dimensions under
//! another numbering ([`switch_product`]). The structural facts that
//! `schedule::cut`, `schedule::flow` and `schedule::product` share; the
//! closed form and its trees are explained in `schedule::product`'s module
//! doc.

use crate::model::topology::{DimKind, Topology};
use serde::Serialize;

/// Most dimensions (of two or more NPUs) whose orders the mixture weighs
/// (d! columns).
pub const MAX_DIMS: usize = 7;

/// One dimension of a product network (of two or more NPUs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dim {
    /// The topology's dimension index.
    pub index: usize,
    /// Its wiring (ring, line of more than two NPUs, fully-connected or
    /// switch).
    pub kind: DimKind,
    /// NPUs along it.
    pub size: u32,
    /// Every link's bandwidth, GB/s.
    pub link_gbps: f64,
    /// Every link's latency, ns.
    pub latency_ns: f64,
}

impl Dim {
    /// GB/s an NPU sends (and receives) in this dimension: the `E_i` of the
    /// cut (`schedule::product`'s module doc); for a line an end NPU's, one
    /// link.
    pub fn egress_gbps(&self) -> f64 {
        match self.kind {
            DimKind::Ring => 2.0 * self.link_gbps,
            // An end NPU's, one link: what the cut sees (`schedule::product`'s module doc).
            DimKind::Line => self.link_gbps,
            DimKind::FullyConnected => f64::from(self.size - 1) * self.link_gbps,
            DimKind::Switch => self.link_gbps,
        }
    }
}

/// The dimensions of `topo` if it is a product network
/// (`schedule::product`'s module doc): built from dimensions (lines too: a
/// mesh), every link of a dimension alike and present. `None` otherwise, and for a single NPU.
pub fn dims(topo: &Topology) -> Option<Vec<Dim>> {
    if topo.dims.is_empty() || topo.dims.len() > 20 {
        return None;
    }
    let n = u64::from(topo.npus);
    let mut first: Vec<Option<(f64, f64)>> = vec![None; topo.dims.len()];
    let mut count = vec![0u64; topo.dims.len()];
    for l in &topo.links {
        let d = usize::from(l.dim?);
        if d >= topo.dims.len() || !(l.gbps > 0.0 && l.gbps.is_finite() && l.latency_ns.is_finite()) {
            return None;
        }
        match first[d] {
            None => first[d] = Some((l.gbps, l.latency_ns)),
            Some(f) if f == (l.gbps, l.latency_ns) => {}
            Some(_) => return None,
        }
        count[d] += 1;
    }
    let mut out = Vec::new();
    for (d, td) in topo.dims.iter().enumerate() {
        let size = td.size;
        if size < 2 {
            continue;
        }
        let expect = match td.kind {
            DimKind::Ring | DimKind::Switch => 2 * n,
            // A line of two is a fully-connected pair (one link each
            // way); a longer one has size - 1 links each way per line.
            DimKind::FullyConnected => n * u64::from(size - 1),
            DimKind::Line if size == 2 => n,
            DimKind::Line => 2 * n / u64::from(size) * u64::from(size - 1),
        };
        if count[d] != expect {
            return None;
        }
        let (link_gbps, latency_ns) = first[d]?;
        out.push(Dim {
            index: d,
            kind: if td.kind == DimKind::Line && size == 2 {
                DimKind::FullyConnected
            } else {
                td.kind
            },
            size,
            link_gbps,
            latency_ns,
        });
    }
    (!out.is_empty()).then_some(out)
}

/// The dimensions of `topo` if it is a product network that every
/// translation maps onto itself: [`dims`] without lines of more than two
/// NPUs (a mesh's end NPUs have fewer links). Translation symmetry is what
/// `product::round_time` (one root's trees timed for all), [`link_classes`]
/// and the reduce-scatter + all-gather bound of `algorithm::own_bound` rest on.
pub fn symmetric(topo: &Topology) -> Option<Vec<Dim>> {
    dims(topo).filter(|d| d.iter().all(|d| d.kind != DimKind::Line))
}

/// Most NPUs [`switch_product`] examines (its search for parallel switches
/// grows with the NPUs times a switch's size).
pub const MAX_RELABEL_NPUS: u32 = 1 << 16;

/// Most member reads [`switch_product`]'s search for parallel switches may
/// take (NPUs x classes^4 x the largest switch): about a second.
const MAX_RELABEL_WORK: u64 = 1 << 28;

/// A network of NPUs and switches alone (an edge list, say) that is a
/// product of switch dimensions under another numbering: the product built
/// from dimensions, and where each of its nodes and links lies in the
/// original. Forests and cuts are computed on `product` and carried back.
#[derive(Debug, Clone)]
pub struct Relabel {
    /// The same fabric built from switch dimensions.
    pub product: Topology,
    /// Per node of `product` (NPUs, then switches): the original's node.
    pub node: Vec<u32>,
    /// Per link of `product`: the original's link.
    pub link: Vec<u32>,
}

/// `topo` as a product of switch dimensions, if it is one under some
/// numbering of its NPUs: every link joins an NPU and a switch (an up link
/// and a down link per member, alike on every switch of a class), every NPU
/// is on one switch of each class, and the NPUs are the product of the
/// classes' sizes (the DGX-like edge list: each GPU on its node's NVSwitch
/// and on its rail's switch). `None` for anything else, for a topology
/// already built from dimensions, above [`MAX_RELABEL_NPUS`] NPUs, and
/// where the search would read more than 2^28 switch members.
///
/// The classes: in a product, NPUs u and v on a switch s of class i, and u's
/// switch t of class j != i, the switch of v in class j is the one of v's
/// switches (not s) whose other members each share a switch with a member of
/// t (a member of v's class-l switch, l != i, j, differs from every member
/// of t in two coordinates); these pairs are joined into classes. The
/// coordinates: along class j, two NPUs agree iff the switches of the other
/// classes connect them. The result is then checked switch by switch (each
/// class's switch holds NPUs differing in its coordinate alone, and the
/// coordinates number the NPUs one to one), so a network that is not a
/// product is never taken for one.
pub fn switch_product(topo: &Topology) -> Option<Relabel> {
    let n = topo.npus as usize;
    let s = topo.switches as usize;
    if !topo.dims.is_empty() || n < 2 || s == 0 || topo.npus > MAX_RELABEL_NPUS {
        return None;
    }
    let (members, param) = switch_members(topo)?;
    let mut of: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (sw, m) in members.iter().enumerate() {
        for &v in m {
            of[v as usize].push(sw);
        }
    }
    let k = of[0].len();
    if k == 0 || k > MAX_DIMS || of.iter().any(|o| o.len() != k) {
        return None;
    }
    // The search for parallel switches below reads, per switch member and
    // class pair, a switch's members: refused (not recognised) above
    // MAX_RELABEL_WORK reads rather than run for minutes.
    let largest = members.iter().map(Vec::len).max().unwrap_or(0) as u64;
    let work = (n as u64) * (k as u64).pow(4) * largest;
    if work > MAX_RELABEL_WORK {
        return None;
    }
    let mut class = parallel_switches(&members, &of)?;
    // Classes numbered as NPU 0's switches, innermost (holding the lowest
    // other NPU) first.
    let mut first: Vec<usize> = of[0].clone();
    first.sort_by_key(|&sw| members[sw][1]);
    let roots: Vec<usize> = first.iter().map(|&sw| root(&mut class, sw)).collect();
    let class_of: Vec<usize> = (0..s)
        .map(|sw| {
            let r = root(&mut class, sw);
            roots.iter().position(|&x| x == r)
        })
        .collect::<Option<_>>()?;
    let sizes: Vec<u32> = first.iter().map(|&sw| members[sw].len() as u32).collect();
    let params: Vec<(f64, f64)> = first.iter().map(|&sw| param[sw]).collect::<Option<_>>()?;
    if (0..s).any(|sw| members[sw].len() as u32 != sizes[class_of[sw]] || param[sw] != Some(params[class_of[sw]]))
        || sizes.iter().map(|&x| u64::from(x)).product::<u64>() != n as u64
    {
        return None;
    }
    // Each NPU's switch of each class.
    let mut switch_in = vec![usize::MAX; n * k];
    for (v, o) in of.iter().enumerate() {
        for &sw in o {
            let slot = &mut switch_in[v * k + class_of[sw]];
            if *slot != usize::MAX {
                return None;
            }
            *slot = sw;
        }
    }
    let npu = coordinates(n, &members, &first, &class_of, &sizes)?;
    let dims: Vec<(String, DimKind, u32)> = (0..k)
        .map(|j| (format!("switch{j}"), DimKind::Switch, sizes[j]))
        .collect();
    let gbps: Vec<f64> = params.iter().map(|p| p.0).collect();
    let lat: Vec<f64> = params.iter().map(|p| p.1).collect();
    let product = Topology::from_dims(&topo.name, &dims, &gbps, &lat);
    let node = product_nodes(&product, &npu, &switch_in, k, s)?;
    let link = product
        .links
        .iter()
        .map(|l| topo.link_between(node[l.src as usize], node[l.dst as usize]))
        .collect::<Option<Vec<u32>>>()?;
    Some(Relabel { product, node, link })
}

/// Per switch of `topo` (an NPU-and-switch network), its members sorted
/// (by its up links, which must match its down links, two or more and
/// none twice) and its links' (GB/s, ns), alike on all of them; `None`
/// when a link is not between an NPU and a switch or is not positive and
/// finite.
#[allow(clippy::type_complexity)]
fn switch_members(topo: &Topology) -> Option<(Vec<Vec<u32>>, Vec<Option<(f64, f64)>>)> {
    let (npus, s) = (topo.npus, topo.switches as usize);
    // Each switch's members (by its up links) and its links' (GB/s, ns).
    let mut up: Vec<Vec<u32>> = vec![Vec::new(); s];
    let mut down: Vec<Vec<u32>> = vec![Vec::new(); s];
    let mut param: Vec<Option<(f64, f64)>> = vec![None; s];
    for l in &topo.links {
        if !(l.gbps > 0.0 && l.gbps.is_finite() && l.latency_ns.is_finite()) {
            return None;
        }
        let (sw, npu, list) = match (l.src >= npus, l.dst >= npus) {
            (false, true) => (l.dst - npus, l.src, &mut up),
            (true, false) => (l.src - npus, l.dst, &mut down),
            _ => return None,
        };
        let sw = sw as usize;
        match param[sw] {
            None => param[sw] = Some((l.gbps, l.latency_ns)),
            Some(p) if p == (l.gbps, l.latency_ns) => {}
            Some(_) => return None,
        }
        list[sw].push(npu);
    }
    for sw in 0..s {
        up[sw].sort_unstable();
        down[sw].sort_unstable();
        if up[sw] != down[sw] || up[sw].len() < 2 || up[sw].windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
    }
    Some((up, param))
}

/// The representative of `x`'s set in the union-find forest `c` (paths
/// halved on the way).
fn root(c: &mut [usize], mut x: usize) -> usize {
    while c[x] != x {
        c[x] = c[c[x]];
        x = c[x];
    }
    x
}

/// The switches joined into classes ([`switch_product`]'s doc): for each
/// switch `sw`, its first member u and each other member v, and each other
/// switch t of u, v's switch parallel to t is joined to t. A union-find
/// forest over the switches (its roots name the classes), or `None` when
/// some v has no parallel switch (not a product).
fn parallel_switches(members: &[Vec<u32>], of: &[Vec<usize>]) -> Option<Vec<usize>> {
    let on = |sw: usize, v: u32| members[sw].binary_search(&v).is_ok();
    // Whether `w` shares a switch other than `not` with a member of `t`.
    let meets = |w: u32, not: usize, t: usize| {
        of[w as usize]
            .iter()
            .any(|&x| x != not && members[t].iter().any(|&y| y != w && on(x, y)))
    };
    let mut class: Vec<usize> = (0..members.len()).collect();
    for sw in 0..members.len() {
        let u = members[sw][0];
        for &v in &members[sw][1..] {
            for &t in &of[u as usize] {
                if t == sw {
                    continue;
                }
                let parallel = of[v as usize]
                    .iter()
                    .copied()
                    .find(|&t2| t2 != sw && members[t2].iter().find(|&&w| w != v).is_some_and(|&w| meets(w, t2, t)))?;
                let (a, b) = (root(&mut class, t), root(&mut class, parallel));
                class[a] = b;
            }
        }
    }
    Some(class)
}

/// Per product rank, the original NPU (of `n`): along class j, the components of
/// the other classes' switches, numbered as the members of NPU 0's class-j
/// switch (`first[j]`), class 0 innermost. `None` unless the coordinates
/// number the NPUs one to one.
fn coordinates(n: usize, members: &[Vec<u32>], first: &[usize], class_of: &[usize], sizes: &[u32]) -> Option<Vec<u32>> {
    let mut rank = vec![0u32; n];
    let mut stride = 1u32;
    for j in 0..first.len() {
        let mut comp: Vec<usize> = (0..n).collect();
        for sw in (0..members.len()).filter(|&sw| class_of[sw] != j) {
            let a = members[sw][0] as usize;
            for &v in &members[sw][1..] {
                let (x, y) = (root(&mut comp, a), root(&mut comp, v as usize));
                comp[x] = y;
            }
        }
        let mut label = vec![u32::MAX; n];
        for (i, &v) in members[first[j]].iter().enumerate() {
            let r = root(&mut comp, v as usize);
            if label[r] != u32::MAX {
                return None;
            }
            label[r] = i as u32;
        }
        for (v, rk) in rank.iter_mut().enumerate() {
            let c = label[root(&mut comp, v)];
            if c == u32::MAX {
                return None;
            }
            *rk += c * stride;
        }
        stride *= sizes[j];
    }
    let mut npu = vec![u32::MAX; n];
    for (v, &r) in rank.iter().enumerate() {
        if std::mem::replace(&mut npu[r as usize], v as u32) != u32::MAX {
            return None;
        }
    }
    Some(npu)
}

/// Per node of `product`, the original's: the NPUs by `npu`, and each
/// product switch the original switch of its class that its NPUs are on
/// (`switch_in`: per original NPU, its switch of each of the `k` classes).
/// Every product switch must be one original switch (which checks that
/// each switch's members differ in its own coordinate alone), and the
/// `switches` of the original all named: else `None`.
fn product_nodes(product: &Topology, npu: &[u32], switch_in: &[usize], k: usize, switches: usize) -> Option<Vec<u32>> {
    let npus = npu.len() as u32;
    let mut node = vec![u32::MAX; product.nodes() as usize];
    node[..npu.len()].copy_from_slice(npu);
    for r in 0..npus {
        for j in 0..k {
            let sw = npus + switch_in[npu[r as usize] as usize * k + j] as u32;
            let p = product.switch_node(r, j) as usize;
            // A product switch named twice must be the same switch.
            let before = std::mem::replace(&mut node[p], sw);
            if before != u32::MAX && before != sw {
                return None;
            }
        }
    }
    if product.switches as usize != switches || node.contains(&u32::MAX) {
        return None;
    }
    Some(node)
}

impl Relabel {
    /// Nodes of `product` as the original's, sorted.
    pub fn nodes(&self, set: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = set.iter().map(|&x| self.node[x as usize]).collect();
        out.sort_unstable();
        out
    }
}

/// The all-gather cut of a product network: ns per byte of one NPU's shard,
/// and the dimensions D (positions in `dims`) whose sub-product attains it.
///
/// ```
/// use dimsum::model::topology::Topology;
/// use dimsum::schedule::shape::{dims, gather_cut};
///
/// // A 4x4 torus of 50 GB/s links: each NPU has 100 GB/s per dimension.
/// // D = one dimension: (4 - 1) / 100; D = both: (16 - 1) / 200, the larger.
/// let t = Topology::torus(&[4, 4], true, &[50.0, 50.0], &[0.0, 0.0]);
/// let d = dims(&t).ok_or("a torus is a product network")?;
/// let (ns_per_byte, set) = gather_cut(&d);
/// assert!((ns_per_byte - 0.075).abs() < 1e-12);
/// assert_eq!(set, vec![0, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn gather_cut(dims: &[Dim]) -> (f64, Vec<usize>) {
    let mut best = (0.0, Vec::new());
    for mask in 1u32..(1 << dims.len()) {
        let d: Vec<usize> = (0..dims.len()).filter(|i| mask >> i & 1 == 1).collect();
        let prod: f64 = d.iter().map(|&i| f64::from(dims[i].size)).product();
        let e: f64 = d.iter().map(|&i| dims[i].egress_gbps()).sum();
        let v = (prod - 1.0) / e;
        if v > best.0 {
            best = (v, d);
        }
    }
    best
}

/// The node set that attains the cut: the NPUs whose coordinates in D are
/// 0, and the switches of the other dimensions' groups among them.
pub fn cut_set(topo: &Topology, dims: &[Dim], d: &[usize]) -> Vec<u32> {
    let inside = |r: u32| {
        let c = topo.coords(r);
        d.iter().all(|&i| c[dims[i].index] == 0)
    };
    let npus: Vec<u32> = (0..topo.npus).filter(|&r| inside(r)).collect();
    let mut set = npus.clone();
    for (i, dim) in dims.iter().enumerate() {
        if dim.kind == DimKind::Switch && !d.contains(&i) {
            set.extend(npus.iter().map(|&r| topo.switch_node(r, dim.index)));
        }
    }
    set.sort_unstable();
    set.dedup();
    set
}

/// Link classes of a product network: per link its class, and how many
/// there are. A class is a dimension with a ring's direction, a
/// fully-connected group's offset, or a switch's up or down ports; the
/// translations carry every link of a class to every other (each class
/// holds one link per NPU).
pub type LinkClasses = (Vec<usize>, usize);

/// The [`LinkClasses`] of `topo`, or `None` if it is not a product network
/// with translation symmetry ([`symmetric`]: meshes have none).
pub fn link_classes(topo: &Topology) -> Option<LinkClasses> {
    let dims = symmetric(topo)?;
    let mut base = vec![usize::MAX; topo.dims.len()];
    let mut kind = vec![DimKind::Ring; topo.dims.len()];
    let mut next = 0;
    for d in &dims {
        base[d.index] = next;
        kind[d.index] = d.kind;
        next += match d.kind {
            DimKind::Ring | DimKind::Line | DimKind::Switch => 2,
            DimKind::FullyConnected => d.size as usize - 1,
        };
    }
    let class = topo
        .links
        .iter()
        .enumerate()
        .map(|(id, l)| {
            let d = usize::from(l.dim.unwrap_or(0));
            let size = topo.dims[d].size;
            base[d]
                + match kind[d] {
                    DimKind::Ring | DimKind::Line => usize::from(topo.neighbour_link(l.src, d, 1) != Some(id as u32)),
                    DimKind::FullyConnected => {
                        let (a, b) = (topo.coords(l.src)[d], topo.coords(l.dst)[d]);
                        ((b + size - a) % size) as usize - 1
                    }
                    DimKind::Switch => usize::from(l.src >= topo.npus),
                }
        })
        .collect();
    Some((class, next))
}
