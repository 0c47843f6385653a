//! The explicit network: a directed graph of NPUs, switches and links, each
//! link with its own bandwidth (GB/s, 1 GB = 1e9 B) and latency (ns).
//!
//! Where `fabric` says "dimension d gives every NPU B_d GB/s", a topology
//! says which wires carry it, so a schedule can be replayed with contention.
//! Built from:
//! - a `Fabric` and an allocation, converting per-NPU bandwidth per link as
//!   LIBRA and ASTRA-sim's analytical backend do: a ring gives each NPU a link
//!   to both neighbours at B/2 per direction, a fully-connected group a link to
//!   each of the n-1 others at B/(n-1), a switch one up and one down link at B
//!   to one switch node per group;
//! - k-ary n-dimensional tori and meshes (`torus:8x8x8`, `mesh:5x5`), with a
//!   bandwidth and latency per dimension (a torus dimension is a ring, a mesh
//!   dimension a line without the wrap-around link);
//! - an edge list (one directed link per line, asymmetric links allowed);
//! - an ASTRA-sim analytical network.yml (per-link bandwidth in GB/s where
//!   ASTRA-sim's GB is 2^30 B, latency in ns, one entry per dimension).
//!
//! NPUs are nodes `0..npus` and keep their rank; switches follow them. A
//! topology built from dimensions keeps them (rank <-> coordinates, dimension
//! 0 fastest) and routes dimension by dimension, the shorter way round a ring
//! (ties go forward), up and down through a dimension's switch. An edge list
//! has no dimensions and routes on fewest hops (breadth-first; ties to the
//! lower link id).

use crate::error::InputError;
use crate::model::fabric::{Block, Fabric};
use crate::model::units;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// No link / no node.
pub const NONE: u32 = u32::MAX;
/// Most NPUs (and, separately, switches) a topology may have.
const MAX_NODES: u64 = 1 << 22;
/// Most directed links a topology may have: 2^24, which fc:4096 (4,096 x
/// 4,095 links) just fits. Measured here at about 70 bytes and 0.2 us a
/// link to build (fc:4096: 1.2 GB, 3.4 s), so the limit holds a topology
/// to about 1.2 GB; fc:100000 (10^10 links) ran this machine out of its
/// 24 GB before it was checked.
pub const MAX_LINKS: u64 = 1 << 24;

/// The directed links a topology of dimensions `dims` (kind, size; NPUs
/// the product of the sizes) has, as [`Topology::from_dims`] wires them:
/// per NPU, 2 for a ring, line or switch (up and down), size - 1 for a
/// fully-connected group. Counted in u128, so any sizes are safe.
pub fn links_needed(dims: &[(DimKind, u32)]) -> u128 {
    let npus: u128 = dims.iter().map(|d| u128::from(d.1)).product();
    dims.iter()
        .filter(|d| d.1 >= 2)
        .map(|&(k, size)| match k {
            DimKind::FullyConnected => npus * u128::from(size - 1),
            DimKind::Ring | DimKind::Line | DimKind::Switch => 2 * npus,
        })
        .sum()
}

/// Dimensions whose topology would have more than [`MAX_LINKS`] links
/// ([`check_links`]); the message gives the count and the limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{links} links (about {gb:.1} GB to build), more than a topology may hold ({MAX_LINKS}): use fewer NPUs{hint}",
    gb = *.links as f64 * 70.0 / 1e9,
    hint = if *.fully_connected { " or a switch instead of a fully-connected dimension" } else { "" }
)]
pub struct TooManyLinks {
    /// The directed links the dimensions would have.
    pub links: u128,
    /// Whether one of them is a fully-connected group of more than two NPUs
    /// (a switch would need fewer links).
    pub fully_connected: bool,
}

/// Refuses dimensions whose topology would exceed [`MAX_LINKS`], before
/// anything is built.
pub fn check_links(dims: &[(DimKind, u32)]) -> Result<(), TooManyLinks> {
    let links = links_needed(dims);
    if links > u128::from(MAX_LINKS) {
        return Err(TooManyLinks {
            links,
            fully_connected: dims.iter().any(|d| d.0 == DimKind::FullyConnected && d.1 > 2),
        });
    }
    Ok(())
}

/// The hasher of the (source, destination) -> link map: each id mixed in
/// by a rotate, an xor and one multiply (FxHash's step). The keys are node
/// ids below 2^22; the default SipHash made building fc:4096 (16.8 million
/// links) take 10 s, most of it hashing.
#[derive(Debug, Default, Clone, Copy)]
struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u32(u32::from(*b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type PairMap = HashMap<(u32, u32), u32, std::hash::BuildHasherDefault<PairHasher>>;

/// One directed link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Link {
    /// Source node.
    pub src: u32,
    /// Destination node.
    pub dst: u32,
    /// Bandwidth, GB/s.
    pub gbps: f64,
    /// Latency, ns.
    pub latency_ns: f64,
    /// The dimension the link belongs to, if the topology has dimensions.
    pub dim: Option<u16>,
}

/// How the NPUs of one dimension are wired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DimKind {
    /// Links to both neighbours, wrapping around (a torus dimension).
    Ring,
    /// Links to both neighbours, no wrap-around (a mesh dimension).
    Line,
    /// A link between every pair.
    FullyConnected,
    /// An up and a down link per NPU to one switch per group.
    Switch,
}

impl DimKind {
    /// How a fabric dimension's block is wired.
    pub fn of(block: Block) -> DimKind {
        match block {
            Block::Ring => DimKind::Ring,
            Block::FullyConnected => DimKind::FullyConnected,
            Block::Switch => DimKind::Switch,
        }
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            DimKind::Ring => "ring",
            DimKind::Line => "line",
            DimKind::FullyConnected => "fully-connected",
            DimKind::Switch => "switch",
        }
    }
}

/// One dimension of a topology built from dimensions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopoDim {
    /// Name, e.g. `package` or `x`.
    pub name: String,
    /// Wiring.
    pub kind: DimKind,
    /// NPUs along the dimension.
    pub size: u32,
}

/// An explicit network.
#[derive(Debug, Clone)]
pub struct Topology {
    /// What it was built from, e.g. `torus:4x4`.
    pub name: String,
    /// NPUs: nodes `0..npus`.
    pub npus: u32,
    /// Switch nodes: `npus..npus + switches`.
    pub switches: u32,
    /// Every directed link.
    pub links: Vec<Link>,
    /// Dimensions, innermost first (empty for an edge list).
    pub dims: Vec<TopoDim>,
    /// Outgoing links per node.
    out: Vec<Vec<u32>>,
    /// The first link from one node to another.
    pair: PairMap,
    /// Per dimension and NPU: the link to the next (+1) and previous (-1)
    /// neighbour on ring and line dimensions.
    next: Vec<Vec<u32>>,
    prev: Vec<Vec<u32>>,
    /// Per dimension: the node id of its first switch.
    switch_base: Vec<u32>,
    /// An edge list's `dim=` labels, by index.
    edge_dim_names: Vec<String>,
}

/// A route that does not exist.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no path from node {src} to node {dst} in topology `{topology}`")]
pub struct NoRoute {
    /// Source node.
    pub src: u32,
    /// Destination node.
    pub dst: u32,
    /// The topology's name.
    pub topology: String,
}

impl Topology {
    fn empty(name: String, npus: u32) -> Topology {
        Topology {
            name,
            npus,
            switches: 0,
            links: Vec::new(),
            dims: Vec::new(),
            out: vec![Vec::new(); npus as usize],
            pair: PairMap::default(),
            next: Vec::new(),
            prev: Vec::new(),
            switch_base: Vec::new(),
            edge_dim_names: Vec::new(),
        }
    }

    fn add_node(&mut self) -> u32 {
        self.out.push(Vec::new());
        self.switches += 1;
        self.npus + self.switches - 1
    }

    fn add_link(&mut self, src: u32, dst: u32, gbps: f64, latency_ns: f64, dim: Option<u16>) -> u32 {
        let id = self.links.len() as u32;
        self.links.push(Link {
            src,
            dst,
            gbps,
            latency_ns,
            dim,
        });
        self.out[src as usize].push(id);
        self.pair.entry((src, dst)).or_insert(id);
        id
    }

    /// All nodes: NPUs then switches.
    pub fn nodes(&self) -> u32 {
        self.npus + self.switches
    }

    /// The summed latency of the links `route` names (link ids), ns.
    pub fn route_latency_ns(&self, route: &[u32]) -> f64 {
        route.iter().map(|&l| self.links[l as usize].latency_ns).sum()
    }

    /// Outgoing links of `node`.
    pub(crate) fn out_links(&self, node: u32) -> &[u32] {
        &self.out[node as usize]
    }

    /// A topology of dimensions: `kinds[d]` of `sizes[d]` NPUs with per-link
    /// bandwidth `gbps[d]` and latency `latency_ns[d]`.
    pub fn from_dims(name: &str, dims: &[(String, DimKind, u32)], gbps: &[f64], latency_ns: &[f64]) -> Topology {
        let npus: u32 = dims.iter().map(|d| d.2).product();
        let mut t = Topology::empty(name.to_string(), npus);
        t.dims = dims
            .iter()
            .map(|(n, k, s)| TopoDim {
                name: n.clone(),
                kind: *k,
                size: *s,
            })
            .collect();
        let mut stride = 1u32;
        for (d, (_, kind, size)) in dims.iter().enumerate() {
            let (size, g, l, dd) = (*size, gbps[d], latency_ns[d], Some(d as u16));
            let mut next = vec![NONE; npus as usize];
            let mut prev = vec![NONE; npus as usize];
            let groups = npus / size;
            let base = t.npus + t.switches;
            for r in 0..npus {
                if size < 2 {
                    break;
                }
                let c = (r / stride) % size;
                let at = |j: u32| r - c * stride + j * stride;
                match kind {
                    DimKind::Ring | DimKind::Line => {
                        if *kind == DimKind::Ring || c + 1 < size {
                            next[r as usize] = t.add_link(r, at((c + 1) % size), g, l, dd);
                        }
                        if *kind == DimKind::Ring || c > 0 {
                            prev[r as usize] = t.add_link(r, at((c + size - 1) % size), g, l, dd);
                        }
                    }
                    DimKind::FullyConnected => {
                        for j in 0..size {
                            if j != c {
                                t.add_link(r, at(j), g, l, dd);
                            }
                        }
                    }
                    DimKind::Switch => {}
                }
            }
            if *kind == DimKind::Switch && size >= 2 {
                for _ in 0..groups {
                    t.add_node();
                }
                for r in 0..npus {
                    let sw = base + t.group_of(r, stride, size);
                    t.add_link(r, sw, g, l, dd);
                    t.add_link(sw, r, g, l, dd);
                }
            }
            t.next.push(next);
            t.prev.push(prev);
            t.switch_base.push(base);
            stride *= size;
        }
        t
    }

    /// Index of the group of `rank` along a dimension of `size` NPUs whose
    /// coordinate varies with stride `stride`.
    fn group_of(&self, rank: u32, stride: u32, size: u32) -> u32 {
        rank % stride + stride * (rank / (stride * size))
    }

    /// The topology of `fabric` at allocation `bw` (GB/s per NPU per
    /// dimension), per-link bandwidth converted as LIBRA does (module doc).
    pub fn from_fabric(fabric: &Fabric, bw: &[f64]) -> Topology {
        let dims: Vec<(String, DimKind, u32)> = fabric
            .dims
            .iter()
            .map(|d| (d.name.clone(), DimKind::of(d.block), d.npus))
            .collect();
        let gbps: Vec<f64> = fabric
            .dims
            .iter()
            .zip(bw)
            .map(|(d, b)| per_link_gbps(d.block, d.npus, *b))
            .collect();
        let lat: Vec<f64> = fabric.dims.iter().map(|d| d.latency_ns).collect();
        Topology::from_dims(&fabric.shape(), &dims, &gbps, &lat)
    }

    /// A k-ary n-dimensional torus (`wrap`) or mesh.
    ///
    /// ```
    /// use dimsum::model::topology::Topology;
    /// // A 4x4 torus: 16 NPUs, each with a link to both neighbours in
    /// // both dimensions: 16 x 4 = 64 directed links.
    /// let t = Topology::torus(&[4, 4], true, &[50.0, 50.0], &[500.0, 500.0]);
    /// assert_eq!((t.npus, t.switches, t.links.len()), (16, 0, 64));
    /// assert_eq!(t.coords(6), vec![2, 1]);
    /// // The mesh drops the wrap-around links: 4 lines of 3 links each
    /// // way per dimension, 2 x 4 x 3 x 2 = 48.
    /// let m = Topology::torus(&[4, 4], false, &[50.0, 50.0], &[500.0, 500.0]);
    /// assert_eq!(m.links.len(), 48);
    /// ```
    pub fn torus(sizes: &[u32], wrap: bool, gbps: &[f64], latency_ns: &[f64]) -> Topology {
        let kind = if wrap { DimKind::Ring } else { DimKind::Line };
        let names = ["x", "y", "z", "w", "v", "u"];
        let dims: Vec<(String, DimKind, u32)> = sizes
            .iter()
            .enumerate()
            .map(|(d, s)| (names.get(d).map_or(format!("d{d}"), |n| n.to_string()), kind, *s))
            .collect();
        let shape: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        let name = format!("{}:{}", if wrap { "torus" } else { "mesh" }, shape.join("x"));
        Topology::from_dims(&name, &dims, gbps, latency_ns)
    }

    /// A topology of `npus` NPUs (nodes `0..npus`) and `switches` switch
    /// nodes (`npus..`) joined by `links`, each one way: (source,
    /// destination, GB/s, ns). It has no dimensions, so it routes on fewest
    /// hops as an edge list does; `NoRoute` names a pair of NPUs that cannot
    /// reach each other. `model::failure` builds the groups that lost a part
    /// with it.
    pub fn from_links(
        name: &str,
        npus: u32,
        switches: u32,
        links: &[(u32, u32, f64, f64)],
    ) -> Result<Topology, NoRoute> {
        let mut t = Topology::empty(name.to_string(), npus);
        for _ in 0..switches {
            t.add_node();
        }
        for &(a, b, gbps, lat) in links {
            if a >= t.nodes() || b >= t.nodes() {
                return Err(NoRoute {
                    src: a,
                    dst: b,
                    topology: t.name,
                });
            }
            t.add_link(a, b, gbps, lat, None);
        }
        t.check_connected()?;
        Ok(t)
    }

    /// Coordinates of NPU `rank` (dimension 0 fastest).
    pub fn coords(&self, rank: u32) -> Vec<u32> {
        let mut r = rank;
        self.dims
            .iter()
            .map(|d| {
                let c = r % d.size;
                r /= d.size;
                c
            })
            .collect()
    }

    /// Stride of dimension `d` in rank numbering.
    pub(crate) fn stride(&self, d: usize) -> u32 {
        self.dims[..d].iter().map(|x| x.size).product()
    }

    /// The NPUs of `rank`'s group along dimension `d`, by coordinate.
    pub fn members(&self, rank: u32, d: usize) -> Vec<u32> {
        let stride = self.stride(d);
        let size = self.dims[d].size;
        let c = (rank / stride) % size;
        (0..size).map(|j| rank - c * stride + j * stride).collect()
    }

    /// The link from NPU `rank` to its neighbour `dir` (+1 or -1) along ring
    /// or line dimension `d`, if there is one.
    pub(crate) fn neighbour_link(&self, rank: u32, d: usize, dir: i8) -> Option<u32> {
        let table = if dir > 0 { self.next.get(d)? } else { self.prev.get(d)? };
        table.get(rank as usize).copied().filter(|&l| l != NONE)
    }

    /// The switch node of NPU `rank`'s group along switch dimension `d`.
    pub(crate) fn switch_node(&self, rank: u32, d: usize) -> u32 {
        self.switch_base[d] + self.group_of(rank, self.stride(d), self.dims[d].size)
    }

    /// The first link from node `src` to node `dst`, if there is one.
    pub(crate) fn link_between(&self, src: u32, dst: u32) -> Option<u32> {
        self.pair.get(&(src, dst)).copied()
    }

    /// The links a transfer from `src` to `dst` takes (module doc).
    pub fn route(&self, src: u32, dst: u32) -> Result<Vec<u32>, NoRoute> {
        let none = || NoRoute {
            src,
            dst,
            topology: self.name.clone(),
        };
        if src == dst {
            return Ok(Vec::new());
        }
        if self.dims.is_empty() || src >= self.npus || dst >= self.npus {
            return self.bfs_route(src, dst).ok_or_else(none);
        }
        let mut path = Vec::new();
        let mut cur = src;
        let mut stride = 1u32;
        for (d, dim) in self.dims.iter().enumerate() {
            let size = dim.size;
            let (a, b) = ((cur / stride) % size, (dst / stride) % size);
            if a != b {
                match dim.kind {
                    DimKind::Ring | DimKind::Line => {
                        let fwd = (b + size - a) % size;
                        let forward = if dim.kind == DimKind::Line {
                            b > a
                        } else {
                            fwd <= size - fwd
                        };
                        let hops = if forward { fwd } else { size - fwd };
                        for _ in 0..hops {
                            let l = self
                                .neighbour_link(cur, d, if forward { 1 } else { -1 })
                                .ok_or_else(none)?;
                            path.push(l);
                            cur = self.links[l as usize].dst;
                        }
                    }
                    DimKind::FullyConnected => {
                        let to = cur - a * stride + b * stride;
                        path.push(*self.pair.get(&(cur, to)).ok_or_else(none)?);
                        cur = to;
                    }
                    DimKind::Switch => {
                        let sw = self.switch_base[d] + self.group_of(cur, stride, size);
                        let to = cur - a * stride + b * stride;
                        path.push(*self.pair.get(&(cur, sw)).ok_or_else(none)?);
                        path.push(*self.pair.get(&(sw, to)).ok_or_else(none)?);
                        cur = to;
                    }
                }
            }
            stride *= size;
        }
        Ok(path)
    }

    /// Fewest-hop route by breadth-first search.
    fn bfs_route(&self, src: u32, dst: u32) -> Option<Vec<u32>> {
        let parent = self.bfs_tree(src);
        let mut path = Vec::new();
        let mut cur = dst;
        while cur != src {
            let l = parent[cur as usize];
            if l == NONE {
                return None;
            }
            path.push(l);
            cur = self.links[l as usize].src;
        }
        path.reverse();
        Some(path)
    }

    /// The breadth-first tree from `src`: the link into each node (NONE if
    /// unreachable or the root).
    fn bfs_tree(&self, src: u32) -> Vec<u32> {
        let n = self.nodes() as usize;
        let mut parent = vec![NONE; n];
        let mut seen = vec![false; n];
        seen[src as usize] = true;
        let mut queue = VecDeque::from([src]);
        while let Some(u) = queue.pop_front() {
            for &l in &self.out[u as usize] {
                let v = self.links[l as usize].dst as usize;
                if !seen[v] {
                    seen[v] = true;
                    parent[v] = l;
                    queue.push_back(v as u32);
                }
            }
        }
        parent
    }

    /// Sum of the bandwidth of the links into and out of NPU `rank`, GB/s.
    pub fn io_gbps(&self, rank: u32) -> (f64, f64) {
        let out: f64 = self.out[rank as usize]
            .iter()
            .map(|&l| self.links[l as usize].gbps)
            .sum();
        let inn: f64 = self.links.iter().filter(|l| l.dst == rank).map(|l| l.gbps).sum();
        (inn, out)
    }

    /// Checks that every NPU can reach every other; the error names a pair.
    fn check_connected(&self) -> Result<(), NoRoute> {
        for s in [0, self.npus.saturating_sub(1)] {
            let parent = self.bfs_tree(s);
            if let Some(d) = (0..self.npus).find(|&d| d != s && parent[d as usize] == NONE) {
                return Err(NoRoute {
                    src: s,
                    dst: d,
                    topology: self.name.clone(),
                });
            }
        }
        // Reachability back to NPU 0 from everyone (links may be one-way).
        let mut rev = vec![Vec::new(); self.nodes() as usize];
        for (i, l) in self.links.iter().enumerate() {
            rev[l.dst as usize].push(i as u32);
        }
        let mut seen = vec![false; self.nodes() as usize];
        seen[0] = true;
        let mut queue = VecDeque::from([0u32]);
        while let Some(u) = queue.pop_front() {
            for &l in &rev[u as usize] {
                let v = self.links[l as usize].src as usize;
                if !seen[v] {
                    seen[v] = true;
                    queue.push_back(v as u32);
                }
            }
        }
        if let Some(s) = (0..self.npus).find(|&s| !seen[s as usize]) {
            return Err(NoRoute {
                src: s,
                dst: 0,
                topology: self.name.clone(),
            });
        }
        Ok(())
    }

    /// Reads an edge list (format in `parse_edges`).
    fn load_edges(path: &Path) -> Result<Topology, InputError> {
        let text = crate::io::read_text(path, crate::io::MAX_TEXT_BYTES)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read the edge list: {e}")))?;
        Topology::parse_edges(&text, path)
    }

    /// An edge list: one link per line, `SRC -> DST BANDWIDTH LATENCY` (one
    /// direction) or `SRC <-> DST BANDWIDTH LATENCY` (both), with an optional
    /// `dim=NAME` after. Nodes are NPU ranks (`0`, `1`, ...) or switches
    /// (`s0`, `s1`, ...). Bandwidth is GB/s or has a unit (`50GiB/s`);
    /// latency is ns or has a unit (`0.5us`). `#` starts a comment.
    pub fn parse_edges(text: &str, path: &Path) -> Result<Topology, InputError> {
        struct Edge {
            a: (bool, u32),
            b: (bool, u32),
            both: bool,
            gbps: f64,
            lat: f64,
            dim: Option<String>,
        }
        let mut edges = Vec::new();
        let node = |s: &str, line: usize, field: &str| -> Result<(bool, u32), InputError> {
            let (sw, num) = match s.strip_prefix('s') {
                Some(n) => (true, n),
                None => (false, s),
            };
            num.parse::<u32>()
                .ok()
                .filter(|&n| u64::from(n) < MAX_NODES)
                .map(|n| (sw, n))
                .ok_or_else(|| {
                    InputError::at(
                        path,
                        Some(line),
                        field,
                        format!("`{s}` is not a node: give an NPU rank (0, 1, ...) or a switch (s0, s1, ...) below {MAX_NODES}"),
                    )
                })
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let f: Vec<&str> = body.split_whitespace().collect();
            if f.len() < 5 || f.len() > 6 || (f[1] != "->" && f[1] != "<->") {
                return Err(InputError::at(
                    path,
                    Some(line),
                    "link",
                    "expected `SRC -> DST BANDWIDTH LATENCY [dim=NAME]` or `SRC <-> DST ...`, e.g. `0 -> 1 50GB/s 500ns`",
                ));
            }
            let a = node(f[0], line, "src")?;
            let b = node(f[2], line, "dst")?;
            if a == b {
                return Err(InputError::at(
                    path,
                    Some(line),
                    "dst",
                    "a link must join two different nodes",
                ));
            }
            let gbps =
                units::parse_gbps(f[3]).map_err(|m| InputError::at(path, Some(line), "bandwidth", m.to_string()))?;
            let lat = units::parse_time_ns(f[4], 1.0)
                .map_err(|m| InputError::at(path, Some(line), "latency", m.to_string()))?;
            let dim = match f.get(5) {
                None => None,
                Some(d) => Some(
                    d.strip_prefix("dim=")
                        .filter(|n| !n.is_empty())
                        .ok_or_else(|| InputError::at(path, Some(line), "dim", format!("`{d}`: expected `dim=NAME`")))?
                        .to_string(),
                ),
            };
            edges.push(Edge {
                a,
                b,
                both: f[1] == "<->",
                gbps,
                lat,
                dim,
            });
        }
        let npus = edges
            .iter()
            .flat_map(|e| [e.a, e.b])
            .filter(|n| !n.0)
            .map(|n| n.1 + 1)
            .max()
            .unwrap_or(0);
        let switches = edges
            .iter()
            .flat_map(|e| [e.a, e.b])
            .filter(|n| n.0)
            .map(|n| n.1 + 1)
            .max()
            .unwrap_or(0);
        if npus < 2 {
            return Err(InputError::at(
                path,
                None,
                "links",
                "the edge list must join at least two NPUs (ranks 0 and 1)",
            ));
        }
        let name = format!("edges:{}", path.display());
        let mut t = Topology::empty(name, npus);
        for _ in 0..switches {
            t.add_node();
        }
        let mut dim_names: Vec<String> = Vec::new();
        for e in &edges {
            let id = |n: (bool, u32)| if n.0 { npus + n.1 } else { n.1 };
            let dim = e.dim.as_ref().map(|d| match dim_names.iter().position(|x| x == d) {
                Some(p) => p as u16,
                None => {
                    dim_names.push(d.clone());
                    (dim_names.len() - 1) as u16
                }
            });
            t.add_link(id(e.a), id(e.b), e.gbps, e.lat, dim);
            if e.both {
                t.add_link(id(e.b), id(e.a), e.gbps, e.lat, dim);
            }
        }
        t.edge_dim_names = dim_names;
        t.check_connected()
            .map_err(|e| InputError::at(path, None, "links", format!("{e}: every NPU must reach every other")))?;
        Ok(t)
    }

    /// Reads an ASTRA-sim analytical network.yml.
    pub fn load_astra(path: &Path) -> Result<Topology, InputError> {
        let text = crate::io::read_text(path, crate::io::MAX_TEXT_BYTES)
            .map_err(|e| InputError::at(path, None, "", format!("cannot read the network file: {e}")))?;
        Topology::parse_astra(&text, path)
    }

    /// ASTRA-sim's network.yml: `topology` (Ring, FullyConnected, Switch),
    /// `npus_count`, `bandwidth` (per link, GB/s with GB = 2^30 B) and
    /// `latency` (ns), one entry per dimension.
    pub fn parse_astra(text: &str, path: &Path) -> Result<Topology, InputError> {
        #[derive(serde::Deserialize)]
        struct Net {
            topology: Vec<String>,
            npus_count: Vec<u32>,
            bandwidth: Vec<f64>,
            latency: Vec<f64>,
        }
        let line_of = |key: &str| {
            text.lines()
                .position(|l| l.trim_start().starts_with(key))
                .map(|i| i + 1)
        };
        let net: Net = serde_yaml::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line());
            InputError::at(path, line, "", format!("not an ASTRA-sim network file: {e}"))
        })?;
        let n = net.topology.len();
        for (key, len) in [
            ("npus_count", net.npus_count.len()),
            ("bandwidth", net.bandwidth.len()),
            ("latency", net.latency.len()),
        ] {
            if len != n {
                return Err(InputError::at(
                    path,
                    line_of(key),
                    key,
                    format!("has {len} entries but `topology` has {n}: give one per dimension"),
                ));
            }
        }
        let mut dims = Vec::new();
        for (d, kind) in net.topology.iter().enumerate() {
            let k = match kind.as_str() {
                "Ring" => DimKind::Ring,
                "FullyConnected" => DimKind::FullyConnected,
                "Switch" => DimKind::Switch,
                other => {
                    return Err(InputError::at(
                        path,
                        line_of("topology"),
                        format!("topology[{d}]"),
                        format!("`{other}` is not supported: use `Ring`, `FullyConnected` or `Switch`"),
                    ));
                }
            };
            if net.npus_count[d] < 1 {
                return Err(InputError::at(
                    path,
                    line_of("npus_count"),
                    format!("npus_count[{d}]"),
                    "must be at least 1",
                ));
            }
            if net.bandwidth[d].is_nan() || net.bandwidth[d] <= 0.0 {
                return Err(InputError::at(
                    path,
                    line_of("bandwidth"),
                    format!("bandwidth[{d}]"),
                    "must be a positive number (GB/s, GB = 2^30 B)",
                ));
            }
            if net.latency[d].is_nan() || net.latency[d] < 0.0 {
                return Err(InputError::at(
                    path,
                    line_of("latency"),
                    format!("latency[{d}]"),
                    "must be a non-negative number of ns",
                ));
            }
            dims.push((format!("dim{d}"), k, net.npus_count[d]));
        }
        let total: u64 = net.npus_count.iter().map(|&n| u64::from(n)).product();
        if total > MAX_NODES {
            return Err(InputError::at(
                path,
                line_of("npus_count"),
                "npus_count",
                format!("{total} NPUs in all: at most {MAX_NODES}"),
            ));
        }
        let kinds: Vec<(DimKind, u32)> = dims.iter().map(|d| (d.1, d.2)).collect();
        check_links(&kinds).map_err(|e| InputError::at(path, line_of("npus_count"), "npus_count", e.to_string()))?;
        let gbps: Vec<f64> = net
            .bandwidth
            .iter()
            .map(|b| b * units::BYTES_PER_GIB / units::BYTES_PER_GB)
            .collect();
        let name = format!("astra:{}", path.display());
        Ok(Topology::from_dims(&name, &dims, &gbps, &net.latency))
    }

    /// The same network with every link reversed: link `i` goes from the
    /// original's destination to its source. Routing falls back to
    /// breadth-first search (dimension routes assume the forward links).
    pub(crate) fn reversed(&self) -> Topology {
        let mut t = Topology::empty(format!("{} (transposed)", self.name), self.npus);
        for _ in 0..self.switches {
            t.add_node();
        }
        for l in &self.links {
            t.add_link(l.dst, l.src, l.gbps, l.latency_ns, l.dim);
        }
        t.edge_dim_names = self.dim_names();
        t
    }

    /// Names of the link labels: the dimensions, or an edge list's `dim=`
    /// names.
    pub(crate) fn dim_names(&self) -> Vec<String> {
        if self.dims.is_empty() {
            self.edge_dim_names.clone()
        } else {
            self.dims.iter().map(|d| d.name.clone()).collect()
        }
    }
}

/// Per-link bandwidth of a fabric dimension at `b` GB/s per NPU (LIBRA's
/// conversion): ring B/2 per direction, fully-connected B/(n-1), switch B.
pub fn per_link_gbps(block: Block, npus: u32, b: f64) -> f64 {
    match block {
        Block::Ring => b / 2.0,
        Block::FullyConnected => b / f64::from(npus.saturating_sub(1).max(1)),
        Block::Switch => b,
    }
}

/// A topology from its command-line spec: `ring:8`, `fc:8`, `switch:8`,
/// `torus:4x4`, `mesh:5x5`, `edges:FILE` or `astra:FILE.yml` (`fabric:`
/// specs need a study and are built by the caller). `gbps` and `latency_ns`
/// give one value for every dimension or one per dimension.
pub fn from_spec(spec: &str, gbps: &[f64], latency_ns: &[f64]) -> Result<Topology, InputError> {
    let (kind, rest) = spec.split_once(':').ok_or_else(|| {
        InputError::arg("--topology", format!("`{spec}`: expected KIND:ARGS, e.g. ring:8, torus:4x4, mesh:5x5, fc:8, switch:8, fabric:STUDY.toml, edges:FILE or astra:FILE.yml"))
    })?;
    let per_dim = |values: &[f64], n: usize, field: &str| -> Result<Vec<f64>, InputError> {
        match values.len() {
            1 => Ok(vec![values[0]; n]),
            m if m == n => Ok(values.to_vec()),
            m => Err(InputError::arg(
                field,
                format!("{m} values for {n} dimensions: give one value or one per dimension"),
            )),
        }
    };
    match kind {
        "edges" => Topology::load_edges(Path::new(rest)),
        "astra" => Topology::load_astra(Path::new(rest)),
        "ring" | "fc" | "fully-connected" | "switch" | "torus" | "mesh" => {
            let sizes = rest
                .split('x')
                .map(|s| s.trim().parse::<u32>().ok().filter(|&n| n >= 1))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| {
                    InputError::arg(
                        "--topology",
                        format!("`{spec}`: sizes must be positive integers, e.g. {kind}:4x4"),
                    )
                })?;
            let total: u64 = sizes.iter().map(|&n| u64::from(n)).product();
            if !(2..=MAX_NODES).contains(&total) {
                return Err(InputError::arg(
                    "--topology",
                    format!("`{spec}`: {total} NPUs; give between 2 and {MAX_NODES}"),
                ));
            }
            let kinds: Vec<(DimKind, u32)> = sizes
                .iter()
                .map(|&s| match kind {
                    "fc" | "fully-connected" => (DimKind::FullyConnected, s),
                    "switch" => (DimKind::Switch, s),
                    _ => (DimKind::Ring, s),
                })
                .collect();
            check_links(&kinds).map_err(|e| InputError::arg("--topology", format!("`{spec}`: {e}")))?;
            let n = sizes.len();
            let g = per_dim(gbps, n, "--link-gbps")?;
            let l = per_dim(latency_ns, n, "--link-latency-us")?;
            match kind {
                "torus" | "ring" if kind == "torus" || n == 1 => {
                    let mut t = Topology::torus(&sizes, true, &g, &l);
                    t.name = spec.to_string();
                    Ok(t)
                }
                "mesh" => Ok(Topology::torus(&sizes, false, &g, &l)),
                "fc" | "fully-connected" | "switch" if n == 1 => {
                    let k = if kind == "switch" {
                        DimKind::Switch
                    } else {
                        DimKind::FullyConnected
                    };
                    let mut t = Topology::from_dims(spec, &[("dim0".to_string(), k, sizes[0])], &g, &l);
                    t.name = spec.to_string();
                    Ok(t)
                }
                _ => Err(InputError::arg(
                    "--topology",
                    format!(
                        "`{spec}`: {kind} takes one size, e.g. {kind}:8 (use torus: or mesh: for several dimensions)"
                    ),
                )),
            }
        }
        _ => Err(InputError::arg(
            "--topology",
            format!(
                "`{kind}` is not a topology kind: use `ring`, `fc`, `switch`, `torus`, `mesh`, `fabric`, `edges` or `astra`"
            ),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // hand-worked values, exact in binary floating point
mod tests {
    use super::*;
    use crate::model::fabric::tests::dim;

    /// Links counted by hand: fc:4096 has 4,096 x 4,095 = 16,773,120
    /// (under 2^24 = 16,777,216); fc:4097 has 4,097 x 4,096 = 16,781,312
    /// (over); a 4x4 torus 2 x 2 x 16 = 64; ring(4) x fc(8) x switch(16)
    /// 512 x (2 + 7 + 2) = 5,632; and the count agrees with what
    /// `from_dims` builds.
    #[test]
    fn links_are_counted_before_building() {
        use DimKind::*;
        assert_eq!(links_needed(&[(FullyConnected, 4096)]), 16_773_120);
        assert!(check_links(&[(FullyConnected, 4096)]).is_ok());
        let e = check_links(&[(FullyConnected, 4097)]).unwrap_err().to_string();
        assert!(
            e.contains("16781312 links") && e.contains("16777216") && e.contains("switch"),
            "{e}"
        );
        let e = check_links(&[(Ring, 1 << 12), (Ring, 1 << 12)])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("switch"), "{e}");
        assert_eq!(links_needed(&[(Ring, 4), (Ring, 4)]), 64);
        let dims = [(Ring, 4), (FullyConnected, 8), (Switch, 16)];
        assert_eq!(links_needed(&dims), 5_632);
        let named: Vec<(String, DimKind, u32)> = dims.iter().map(|d| (String::new(), d.0, d.1)).collect();
        let t = Topology::from_dims("t", &named, &[1.0; 3], &[0.0; 3]);
        assert_eq!(t.links.len(), 5_632);
        // (2^32 - 1)^2 NPUs x 2 x (2^32 - 2) links each: no overflow.
        assert_eq!(
            links_needed(&[(FullyConnected, u32::MAX), (FullyConnected, u32::MAX)]),
            158456324880954722640361160700
        );
    }

    #[test]
    fn fabric_links_per_libra_conversion() {
        let f = Fabric {
            dims: vec![
                dim("a", Block::Ring, 4, 10.0),
                dim("b", Block::FullyConnected, 3, 20.0),
                dim("c", Block::Switch, 2, 30.0),
            ],
        };
        let t = Topology::from_fabric(&f, &[100.0, 60.0, 40.0]);
        assert_eq!(t.npus, 24);
        // Switch groups: 24 / 2 = 12 switches.
        assert_eq!(t.switches, 12);
        // Ring: 2 links per NPU; FC: 2 per NPU; switch: up + down per NPU.
        assert_eq!(t.links.len(), 24 * 2 + 24 * 2 + 24 * 2);
        let (inn, out) = t.io_gbps(0);
        // Ring 2 x 50, FC 2 x 30, switch 40: the per-NPU B sums to 200.
        assert_eq!(out, 100.0 + 60.0 + 40.0);
        assert_eq!(inn, out);
        // Rank 0 -> rank 2 on the ring: two hops forward (tie goes forward).
        assert_eq!(t.route(0, 2).unwrap().len(), 2);
        // Rank 0 -> rank 3: one hop backward.
        let r = t.route(0, 3).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(t.links[r[0] as usize].dst, 3);
        // Rank 0 -> rank 12 (c = 1): up and down through a switch.
        let r = t.route(0, 12).unwrap();
        assert_eq!(r.len(), 2);
        assert!(t.links[r[0] as usize].dst >= 24);
        // Across all three dimensions: 1 ring hop + 1 FC hop + 2 switch hops.
        assert_eq!(t.route(0, 1 + 4 + 12).unwrap().len(), 4);
        t.check_connected().unwrap();
    }

    #[test]
    fn torus_and_mesh() {
        let t = Topology::torus(&[5, 5], true, &[50.0, 50.0], &[500.0, 500.0]);
        assert_eq!(t.links.len(), 25 * 4);
        let m = Topology::torus(&[5, 5], false, &[50.0, 25.0], &[500.0, 500.0]);
        // A 5-line has 4 bidirectional links: 8 directed, 5 lines per dimension.
        assert_eq!(m.links.len(), 2 * 5 * 8);
        // Corner to corner: 4 + 4 hops on the mesh, 2 + 2 on the torus.
        assert_eq!(m.route(0, 24).unwrap().len(), 8);
        assert_eq!(t.route(0, 24).unwrap().len(), 2);
        assert_eq!(m.members(7, 1), vec![2, 7, 12, 17, 22]);
        assert_eq!(m.coords(7), vec![2, 1]);
    }

    #[test]
    fn ring_of_two_has_two_links_each_way() {
        let t = Topology::torus(&[2], true, &[10.0], &[0.0]);
        assert_eq!(t.links.len(), 4);
        assert_ne!(t.neighbour_link(0, 0, 1), t.neighbour_link(0, 0, -1));
    }

    #[test]
    fn edge_list_with_asymmetric_links_and_a_switch() {
        let text = "# a tiny net\n0 -> 1 50GB/s 500ns\n1 -> 0 25 1us dim=slow\n0 <-> s0 100 0\n2 <-> s0 100 0\n";
        let t = Topology::parse_edges(text, Path::new("n.txt")).unwrap();
        assert_eq!((t.npus, t.switches), (3, 1));
        assert_eq!(t.links.len(), 6);
        assert_eq!(t.links[1].latency_ns, 1000.0);
        assert_eq!(t.route(1, 2).unwrap().len(), 3);
        let bad = Topology::parse_edges("0 -> 1 fast 1\n", Path::new("n.txt")).unwrap_err();
        assert_eq!(
            bad.to_string().split(':').take(3).collect::<Vec<_>>(),
            vec!["n.txt", "1", " bandwidth"]
        );
        let oneway = Topology::parse_edges("0 -> 1 1 1\n", Path::new("n.txt")).unwrap_err();
        assert!(oneway.to_string().contains("no path"), "{oneway}");
    }

    #[test]
    fn astra_network_files() {
        let t = Topology::parse_astra(
            "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50.0, 25.0 ]\nlatency: [ 500.0, 100.0 ]\n",
            Path::new("n.yml"),
        )
        .unwrap();
        assert_eq!(t.npus, 8);
        // 50 GiB/s per link = 50 * 2^30 / 1e9 GB/s.
        assert!((t.links[0].gbps - 53.687_091_2).abs() < 1e-9);
        let e = Topology::parse_astra(
            "topology: [ Torus ]\nnpus_count: [ 4 ]\nbandwidth: [ 1 ]\nlatency: [ 1 ]\n",
            Path::new("n.yml"),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("n.yml:1: topology[0]:"), "{e}");
    }

    #[test]
    fn specs() {
        assert_eq!(from_spec("ring:8", &[1.0], &[0.0]).unwrap().links.len(), 16);
        assert_eq!(from_spec("switch:4", &[1.0], &[0.0]).unwrap().switches, 1);
        assert_eq!(from_spec("fc:4", &[1.0], &[0.0]).unwrap().links.len(), 12);
        assert!(from_spec("torus:4x4", &[1.0, 2.0, 3.0], &[0.0]).is_err());
        assert!(from_spec("cube:4", &[1.0], &[0.0]).is_err());
        assert!(from_spec("torus:4xq", &[1.0], &[0.0]).is_err());
    }
}
